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
 * Where the capture triggers of `prior` are: `intact` (on its table as
 * they were armed: every captured column still present is the column it
 * was, since SQLite refuses to drop a column a trigger reads and renaming
 * one rewrites the trigger), `altered` (some differ: a captured column
 * renamed, a trigger dropped or changed by hand) or `gone` (none is left:
 * the table was made again, its triggers dropped with it, or every one was
 * dropped; either way nothing tells which column holds what now).
 */
export type ArmedTriggers = 'intact' | 'altered' | 'gone';

export function armedTriggers(db: Db, prior: CapturedTable): ArmedTriggers {
  const stored = db.prepare("SELECT sql, tbl_name FROM main.sqlite_schema WHERE type = 'trigger' AND name = ?");
  const names = triggerNames(prior.tid);
  const armed: [string, string][] = [
    [names.insert, prior.triggers.insert],
    [names.update, prior.triggers.update],
    [names.delete, prior.triggers.delete],
  ];
  const found = armed.map(([name]) => stored.get(name) as { sql: string; tbl_name: string } | undefined);
  if (found.every((t) => t === undefined)) return 'gone';
  const same = found.every((t, i) => t !== undefined && foldIdent(t.tbl_name) === foldIdent(prior.name) && t.sql === armed[i]?.[1]);
  return same ? 'intact' : 'altered';
}

/**
 * The excluded set a re-arm keeps for `prior` (a table armed before) whose
 * live shape is `info`, its triggers as `triggers` finds them: the stored
 * set, names the table no longer has included (a column added again under
 * one is left out). Undefined when a column left out when the table was
 * armed may have moved under another name, and the table is then not
 * re-armed by itself (it stays unarmed, its readers fail closed) until
 * enable is told which columns to leave out (docs/journal.md, "Columns left
 * out"): when the table has a column it had neither captured nor left out
 * (a rename cannot be told from a drop and an add, nor from a column
 * rotated: renamed, and a new one added under the old name), when it was
 * made again (no capture trigger left: any column may hold the values),
 * when an excluded column is gone while a captured one was renamed, or
 * when a generated column reads an excluded one. A set whose every name
 * was already absent when the table was armed holds no value to move: a
 * new column (ALTER TABLE ADD COLUMN) is captured, as in a table with none.
 */
export function keptExclusion(prior: CapturedTable, info: TableInfo, triggers: ArmedTriggers): readonly string[] | undefined {
  if (prior.excluded.length === 0) return [];
  // By name: a column gone (now, or already when armed) stays left out, and so does one added again under its name.
  const kept = prior.excluded;
  if (generatedFromExcluded(info, kept).length > 0) return undefined;
  if (triggers === 'gone') return undefined;
  if (heldWhenArmed(prior).length === 0) return kept;
  if (newSinceArmed(prior, info).length > 0) return undefined;
  if (goneSinceArmed(prior, info).length > 0 && triggers !== 'intact') return undefined;
  return kept;
}

/** The excluded columns `prior`'s table had when it was armed (not stored as absent). */
function heldWhenArmed(prior: CapturedTable): readonly string[] {
  const absent = new Set(prior.excludedAbsent.map(foldIdent));
  return prior.excluded.filter((c) => !absent.has(foldIdent(c)));
}

/** The excluded columns `prior`'s table had when it was armed and `info` no longer has (maybe renamed). */
function goneSinceArmed(prior: CapturedTable, info: TableInfo): readonly string[] {
  const live = new Set(info.columns.map((c) => foldIdent(c.name)));
  return heldWhenArmed(prior).filter((c) => !live.has(foldIdent(c)));
}

/** The columns of `info` that `prior`'s table neither captured nor left out when it was armed, in table order. */
export function newSinceArmed(prior: CapturedTable, info: TableInfo): readonly string[] {
  const known = new Set([...prior.columns, ...prior.excluded].map(foldIdent));
  return info.columns.filter((c) => !known.has(foldIdent(c.name))).map((c) => c.name);
}

/**
 * The columns new since `prior`'s table was armed, when they are what holds
 * it unarmed (keptExclusion undefined) and naming each one, to leave out
 * (`enable --exclude`) or to capture (`enable --include`), arms it again:
 * undefined when the table has none, or when something naming them cannot
 * answer holds it too (it was made again, a generated column reads an
 * excluded one, an excluded column is gone while its triggers are not as
 * armed). The pipeline file's `include` answers with this rule.
 */
export function includableColumns(prior: CapturedTable, info: TableInfo, triggers: ArmedTriggers): readonly string[] | undefined {
  if (triggers === 'gone' || generatedFromExcluded(info, prior.excluded).length > 0) return undefined;
  const fresh = newSinceArmed(prior, info);
  if (fresh.length === 0) return undefined;
  return keptExclusion({ ...prior, columns: [...prior.columns, ...fresh] }, info, triggers) === undefined ? undefined : fresh;
}

/** Whether `prior`'s table left out, when it was armed, a column it had (one whose values a new column may hold). */
export function heldExcluded(prior: CapturedTable): boolean {
  return heldWhenArmed(prior).length > 0;
}

/**
 * The columns a table held unarmed by keptExclusion should be told to leave
 * out (`enable SRC TABLE --exclude <them>`), the safe answer: the set it
 * has and every column new since it was armed; the generated columns that
 * read an excluded one too; every column but the key when the table was
 * made again (or a captured column renamed while an excluded one went),
 * since a name captured before may hold the values now.
 */
export function suggestedExclusion(prior: CapturedTable, info: TableInfo, triggers: ArmedTriggers): readonly string[] {
  const fresh = newSinceArmed(prior, info);
  const generated = generatedFromExcluded(info, prior.excluded).map((g) => g.column);
  if (generated.length === 0 && (triggers === 'gone' || (fresh.length === 0 && goneSinceArmed(prior, info).length > 0)))
    return info.columns.filter((c) => c.pkIndex === 0).map((c) => c.name);
  const out: string[] = [];
  for (const c of [...prior.excluded, ...generated, ...fresh]) if (!out.some((o) => foldIdent(o) === foldIdent(c))) out.push(c);
  return out;
}

/** The detail of a table held unarmed by keptExclusion, with the enable that leaves out the columns it should (suggestedExclusion) and, for new columns, the one that captures them. */
export function goneExclusionDetail(prior: CapturedTable, info: TableInfo, source: string, triggers: ArmedTriggers): string {
  const live = new Set(info.columns.map((c) => foldIdent(c.name)));
  const generated = generatedFromExcluded(
    info,
    prior.excluded.filter((c) => live.has(foldIdent(c))),
  );
  if (generated.length > 0) return generatedFromExcludedDetail(prior.name, generated);
  const suggested = suggestedExclusion(prior, info, triggers);
  const command = `${enableCommand(source, [prior.name])} --exclude ${shellWord(suggested.join(','))}`;
  const fresh = newSinceArmed(prior, info);
  const gone = goneSinceArmed(prior, info);
  const held = heldWhenArmed(prior);
  const s = (n: number, one: string, many: string) => (n === 1 ? one : many);
  const goneText =
    gone.length === 0
      ? ''
      : `column${s(gone.length, '', 's')} ${gone.join(', ')} of ${prior.name}, left out of capture, ${s(gone.length, 'is', 'are')} gone and `;
  const subject =
    goneText === '' ? `table ${prior.name}, which leaves ${prior.excluded.join(', ')} out of capture, ` : `${goneText}the table `;
  if (triggers === 'gone' || fresh.length === 0) {
    const newText = fresh.length === 0 ? '' : ` (${fresh.join(', ')} ${s(fresh.length, 'is', 'are')} new since it was armed)`;
    const what =
      triggers === 'gone'
        ? 'lost its capture triggers (it was made again, or they were dropped)'
        : 'has capture triggers not as armed (a captured column renamed, or a trigger changed)';
    return `${subject}${what}${newText}: a column named as one captured before may hold the values left out, so it is not re-armed by itself; say which columns to leave out now, e.g. ${command} (every column but the key; name the ones to leave out)`;
  }
  const include = `${enableCommand(source, [prior.name])} --include ${shellWord(fresh.join(','))}`;
  const them = s(fresh.length, 'it', 'them');
  return `${subject}has ${s(fresh.length, 'a new column', 'new columns')} since it was armed, ${fresh.join(', ')}, which may hold the values of ${held.join(', ')}, left out of capture (a rename cannot be told from a drop and an add), so it is not re-armed by itself; to leave ${them} out too, run ${command}; to capture ${them}, run ${include}`;
}
