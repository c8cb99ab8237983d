import type { Db } from '../sqlite/index.ts';
import { shellWord } from '../sqlite/index.ts';
import { PREFIX } from './schema.ts';
import { REASONS, isReasonCode } from '../reasons.ts';

/** Most tables an enable command names before the hint lists them instead. */
const LISTED = 8;

/** `sluice enable FILE TABLE...` as it is typed (files and tables quoted), with `--mode images` when asked. */
export function enableCommand(file: string, tables: readonly string[], mode?: 'images'): string {
  return ['sluice enable', shellWord(file), ...tables.map((t) => shellWord(t)), ...(mode === undefined ? [] : ['--mode', mode])].join(' ');
}

/**
 * How to arm `table` again after it became unarmed for `reason`: enable,
 * but for a reason enable itself refuses (a shape of the table: kinds
 * `unarmed` and `error`, UNIQUE_FROM_ROWID say), where the table must be
 * changed first, as that refusal says. `exclude`: the table is held because
 * a column left out may have moved under another name (the arming's
 * `exclude`), and enable must be told the columns to leave out: the enable
 * names them (`--exclude`).
 */
export function rearmFix(file: string, table: string, reason: string | undefined, exclude?: readonly string[]): string {
  return rearmFixAll(file, [{ table, reason, ...(exclude === undefined ? {} : { exclude }) }]);
}

/**
 * rearmFix of several unarmed tables of `file`: one enable that names them
 * all, after the change each one enable refuses as it is needs; a table
 * enable must be told the columns to leave out of has an enable of its own
 * (`--exclude` applies to every table an enable names).
 */
export function rearmFixAll(
  file: string,
  tables: readonly { readonly table: string; readonly reason: string | undefined; readonly exclude?: readonly string[] | undefined }[],
): string {
  const plain = tables.filter((t) => t.exclude === undefined);
  const told = tables.filter((t) => t.exclude !== undefined);
  const runs = [
    ...(plain.length === 0
      ? []
      : [
          enableCommand(
            file,
            plain.map((t) => t.table),
          ),
        ]),
    ...told.map((t) => `${enableCommand(file, [t.table])} --exclude ${shellWord((t.exclude ?? []).join(','))}`),
  ];
  const run = `run ${runs.join(', and ')}`;
  const changes = plain.filter((t) => enableRefuses(t.reason)).map((t) => `${t.table} as the ${t.reason} refusal says`);
  if (changes.length === 0) return run;
  const them = changes.length === 1 ? 'it as it is' : 'them as they are';
  return `change ${changes.join(', and ')} (enable refuses ${them}, and says how), then ${run}`;
}

/** Whether enable refuses, as it is, a table unarmed for `reason` (a shape of the table: kinds `unarmed` and `error`). */
function enableRefuses(reason: string | undefined): boolean {
  if (reason === undefined || !isReasonCode(reason)) return false;
  const kinds: readonly string[] = REASONS[reason].kinds;
  return kinds.includes('unarmed') && kinds.includes('error');
}

/**
 * What to run on a database that captures nothing yet: sluice enable with
 * its own path and tables (the user names those to capture), or, with many
 * tables or none, what to do in words. Never a placeholder: the message
 * that holds it names the real file.
 */
export function enableHint(db: Db, file: string = db.name): string {
  const tables = userTables(db);
  if (tables.length === 0) return `make a table in ${shellWord(file)}, then run sluice enable ${shellWord(file)} followed by its name`;
  if (tables.length <= LISTED) return `${enableCommand(file, tables)} (of those tables, name the ones to capture)`;
  const shown = tables.slice(0, LISTED).join(', ');
  return `sluice enable ${shellWord(file)} followed by the tables to capture (it has ${tables.length}: ${shown} and ${tables.length - LISTED} more)`;
}

/** The main schema's own tables: not SQLite's, not sluice's, not virtual tables or their shadow tables. */
function userTables(db: Db): string[] {
  try {
    return (
      db.prepare("SELECT name FROM main.pragma_table_list WHERE schema = 'main' AND type = 'table' ORDER BY name").pluck().all() as string[]
    ).filter((n) => !n.startsWith('sqlite_') && !n.startsWith(PREFIX));
  } catch {
    return []; // a file that cannot be read says so elsewhere; the hint goes without its tables
  }
}
