import type { Db } from '../sqlite/index.ts';
import { CaptureRefusedError, InvalidInputError } from '../errors.ts';
import { columnDefinitionNames, describeTable, type TableInfo, foldIdent, shellWord } from '../sqlite/index.ts';
import { readTables, type CapturedTable } from './catalog.ts';
import { enableCommand } from './enable-hint.ts';
import { triggerNames } from './schema.ts';

/*
 * Columns left out of capture (enable's `exclude`). They are in no trigger
 * image, no pending note and no `_sluice_` table; and every path that reads
 * a captured table's columns from the live source (snapshots, re-reads of a
 * row, verify's checksum, a rebuild's copy, a projection's compile) reads
 * the captured columns only, through these functions, never the table's
 * whole column list. docs/journal.md, "Columns left out".
 */

/** The columns of `info` that capture records: all but `excluded` (compared as SQLite compares names). */
export function capturedColumns(info: TableInfo, excluded: readonly string[]): TableInfo['columns'] {
  if (excluded.length === 0) return info.columns;
  const out = new Set(excluded.map(foldIdent));
  return info.columns.filter((c) => !out.has(foldIdent(c.name)));
}

/** `info` as capture sees it: the same table less its excluded columns. */
export function withoutExcluded(info: TableInfo, excluded: readonly string[]): TableInfo {
  return excluded.length === 0 ? info : { ...info, columns: capturedColumns(info, excluded) };
}

/** The columns `table` of the source leaves out of capture (none when it is not captured). */
export function excludedColumns(db: Db, table: string): readonly string[] {
  return readTables(db).find((t) => foldIdent(t.name) === foldIdent(table))?.excluded ?? [];
}

/**
 * A source table as capture sees it now (describeTable less the columns the
 * catalog leaves out): what a projection compiles against and what every
 * read of the live table selects.
 */
export function describeCaptured(db: Db, table: string): TableInfo | undefined {
  const info = describeTable(db, table);
  return info === undefined ? undefined : withoutExcluded(info, excludedColumns(db, table));
}

/**
 * The generated columns of `info` that capture would record although their
 * value is computed from a column `excluded` leaves out (directly, or
 * through another such generated column): each with the name it reads.
 * Read from the column's definition in the CREATE TABLE text, every name it
 * mentions counting as read, so that a doubt makes a column a reader, never
 * the other way round.
 */
export function generatedFromExcluded(info: TableInfo, names: readonly string[]): { column: string; from: string }[] {
  // A name the table does not have (left out by name, dropped since) is read by no column.
  const has = new Set(info.columns.map((c) => foldIdent(c.name)));
  const excluded = names.filter((c) => has.has(foldIdent(c)));
  if (excluded.length === 0) return [];
  const generated = info.columns.filter((c) => c.hidden === 2 || c.hidden === 3);
  if (generated.length === 0) return [];
  const defs = new Map([...columnDefinitionNames(info.sql ?? '')].map(([k, v]) => [foldIdent(k), v]));
  const secret = new Map(excluded.map((c) => [foldIdent(c), c]));
  const out: { column: string; from: string }[] = [];
  for (let grew = true; grew;) {
    grew = false;
    for (const c of generated) {
      if (secret.has(foldIdent(c.name))) continue;
      const names = defs.get(foldIdent(c.name));
      // A definition this reader cannot find is taken to read the first excluded column.
      const from = names === undefined ? excluded[0] : names.map((n) => secret.get(foldIdent(n))).find((n) => n !== undefined);
      if (from === undefined) continue;
      secret.set(foldIdent(c.name), c.name);
      out.push({ column: c.name, from });
      grew = true;
    }
  }
  return out;
}

/** The refusal's text for generatedFromExcluded's columns: each named with what it reads, and the fix. */
export function generatedFromExcludedDetail(table: string, found: readonly { column: string; from: string }[]): string {
  const each = found.map((g) => `column ${g.column} of ${table} is generated from ${g.from}`).join(', and ');
  const names = found.map((g) => g.column).join(', ');
  return `${each}, which is left out of capture: capturing ${found.length === 1 ? 'it' : 'them'} would journal the excluded value. Leave ${names} out of capture too (add ${found.length === 1 ? 'it' : 'them'} to --exclude, or to the pipeline file's exclude)`;
}

/**
 * Checks the columns asked to be left out of `info` and returns them as
 * the table spells them, in table order (then the names of `kept`, the set
 * left out now, that the table no longer has): an unknown column is refused naming
 * the table and its columns, and a key column is refused (events and target
 * rows are found by the key).
 */
export function resolveExclusion(info: TableInfo, requested: readonly string[], kept: readonly string[] = []): string[] {
  const wanted = new Set<string>();
  const absent: string[] = [];
  for (const name of requested) {
    const col = info.columns.find((c) => c.name === name) ?? info.columns.find((c) => foldIdent(c.name) === foldIdent(name));
    // A name the table no longer has but still leaves out (`kept`) may be named again: it stays left out.
    const still = col === undefined ? kept.find((k) => foldIdent(k) === foldIdent(name)) : undefined;
    if (still !== undefined) {
      if (!absent.some((a) => foldIdent(a) === foldIdent(still))) absent.push(still);
      continue;
    }
    if (col === undefined)
      throw new InvalidInputError(
        'UNKNOWN_COLUMN',
        `Table ${info.name} has no column ${name} to leave out of capture (it has ${info.columns.map((c) => c.name).join(', ')}). Fix the name in --exclude (or in the pipeline file's exclude).`,
      );
    if (col.pkIndex > 0)
      throw new CaptureRefusedError(
        'KEY_COLUMN_EXCLUDED',
        info.name,
        `Table ${info.name}: column ${col.name} is part of the primary key (${info.keyColumns.join(', ')}) and cannot be left out of capture: every event and target row is found by its key. Remove ${col.name} from --exclude.`,
      );
    wanted.add(col.name);
  }
  const resolved = info.columns.filter((c) => wanted.has(c.name)).map((c) => c.name);
  const generated = generatedFromExcluded(info, resolved);
  if (generated.length > 0)
    throw new CaptureRefusedError(
      'GENERATED_FROM_EXCLUDED',
      info.name,
      `Table ${info.name}: ${generatedFromExcludedDetail(info.name, generated)}.`,
    );
  return [...resolved, ...absent];
}

/**
 * Whether the capture triggers of `prior` are on its table as they were
 * armed. Then every captured column still present is the column it was:
 * SQLite refuses to drop a column a trigger reads, and renaming one
 * rewrites the trigger. A table made again (its triggers dropped with it)
 * or a captured column renamed breaks this.
 */
export function armedTriggersIntact(db: Db, prior: CapturedTable): boolean {
  const stored = db
    .prepare("SELECT sql FROM main.sqlite_schema WHERE type = 'trigger' AND name = ? AND tbl_name = ? COLLATE NOCASE")
    .pluck();
  const names = triggerNames(prior.tid);
  const armed: [string, string][] = [
    [names.insert, prior.triggers.insert],
    [names.update, prior.triggers.update],
    [names.delete, prior.triggers.delete],
  ];
  return armed.every(([name, sql]) => stored.get(name, prior.name) === sql);
}

/**
 * The excluded set a re-arm keeps for `prior` (a table armed before) whose
 * live shape is `info`: the stored set, names the table no longer has
 * included (a column added again under one is left out). When an excluded
 * column it had when armed is gone and `info` has a column that was neither
 * captured nor excluded, the column may have been renamed (a rename cannot
 * be told from a drop and an add): undefined, and the table is not re-armed
 * by itself (it stays unarmed, its readers fail closed) until enable is told
 * the set again.
 */
export function keptExclusion(prior: CapturedTable, info: TableInfo, intact: boolean): readonly string[] | undefined {
  if (prior.excluded.length === 0) return [];
  // By name: a column gone (now, or already when armed) stays left out, and so does one added again under its name.
  const kept = prior.excluded;
  if (generatedFromExcluded(info, kept).length > 0) return undefined;
  if (goneSinceArmed(prior, info).length === 0) return kept;
  // A table made again may hold the gone column under the name of a captured one it no longer has.
  if (!intact) return undefined;
  const known = new Set([...prior.columns, ...prior.excluded].map(foldIdent));
  if (info.columns.some((c) => !known.has(foldIdent(c.name)))) return undefined;
  return kept;
}

/** The excluded columns `prior`'s table had when it was armed and `info` no longer has (maybe renamed). */
function goneSinceArmed(prior: CapturedTable, info: TableInfo): readonly string[] {
  const live = new Set(info.columns.map((c) => foldIdent(c.name)));
  const absent = new Set(prior.excludedAbsent.map(foldIdent));
  return prior.excluded.filter((c) => !live.has(foldIdent(c)) && !absent.has(foldIdent(c)));
}

/** The detail of a table held unarmed by keptExclusion, with the enable that excludes the columns still left out and the new ones. */
export function goneExclusionDetail(prior: CapturedTable, info: TableInfo, source: string): string {
  const live = new Set(info.columns.map((c) => foldIdent(c.name)));
  const generated = generatedFromExcluded(
    info,
    prior.excluded.filter((c) => live.has(foldIdent(c))),
  );
  if (generated.length > 0) return generatedFromExcludedDetail(prior.name, generated);
  const gone = goneSinceArmed(prior, info);
  const known = new Set([...prior.columns, ...prior.excluded].map(foldIdent));
  const suggested = info.columns.filter(
    (c) => !known.has(foldIdent(c.name)) || prior.excluded.some((x) => foldIdent(x) === foldIdent(c.name)),
  );
  const renamed = suggested.some((c) => !known.has(foldIdent(c.name)));
  // Made again, any column but the key may hold the gone one's values: the safe suggestion leaves them all out.
  const named = renamed ? suggested : info.columns.filter((c) => c.pkIndex === 0);
  const command = `${enableCommand(source, [prior.name])} --exclude ${shellWord(named.map((c) => c.name).join(','))}`;
  const why = renamed
    ? 'the table has a new column (a rename cannot be told from a drop and an add)'
    : 'the table was made again or a captured column renamed (its capture triggers are not as armed: a column named as one captured before may hold its values)';
  const example = renamed ? '(the columns still left out and the new ones)' : '(every column but the key; name the ones to leave out)';
  return `column${gone.length === 1 ? '' : 's'} ${gone.join(', ')} of ${prior.name}, left out of capture, ${gone.length === 1 ? 'is' : 'are'} gone and ${why}, so it is not re-armed by itself; say which columns to leave out now, e.g. ${command} ${example}`;
}
