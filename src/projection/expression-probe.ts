import type { Db } from '../sqlite/index.ts';
import { kindOf } from './kinds/registry.ts';
import { InvalidInputError } from '../errors.ts';
import { collationKnown, foldIdent, quoteIdent, quoteString, describeTable, primaryKeyCollations } from '../sqlite/index.ts';
import { columnDecl, compileProjection, sourceShape, type CompiledProjection, type SourceShape } from './compile.ts';
import { excludedColumnRead } from './compiled.ts';
import { excludedColumns } from '../capture/index.ts';
import type { ProjectionDefinition } from './definition.ts';

/**
 * Lets SQLite itself judge the map expressions and filter: each becomes a
 * STORED generated column of a TEMP probe table shaped like the source.
 * SQLite refuses unknown columns, subqueries and non-deterministic functions
 * (random(), 'now') there, and evaluating one row catches the rest. Nothing
 * is written to any database file.
 */
export function probeExpressions(db: Db, p: CompiledProjection): void {
  const computed = p.columns.filter((c) => c.from === undefined).map((c) => ({ label: `column ${c.name}`, sql: c.expr }));
  if (p.filter !== null) computed.push({ label: 'filter', sql: p.filter });
  if (computed.length === 0) return;
  const cols = p.source.columns.map((c) => `${quoteIdent(c.name)} ${columnDecl(c)}`);
  for (const [i, c] of computed.entries()) {
    const probe = quoteIdent('_sluice_probe');
    try {
      db.exec(`CREATE TEMP TABLE ${probe} (${[...cols, `"_sluice_x${i}" AS ${c.sql} STORED`].join(', ')})`);
      db.exec(`INSERT INTO temp.${probe} DEFAULT VALUES`);
      probeSamples(db, p, c, probe);
    } catch (cause) {
      if (cause instanceof InvalidInputError) throw cause;
      const missing = /no such column: (.+)$/.exec((cause as Error).message)?.[1];
      const excluded = missing === undefined ? undefined : excludedColumnRead(p.source, missing.replace(/^"|"$/g, ''), p.name, c.label);
      if (excluded !== undefined) throw excluded;
      const msg = (cause as Error).message.replace('generated columns', 'projection expressions');
      throw new InvalidInputError(
        'BAD_EXPRESSION',
        `Projection ${p.name}: ${c.label} ${c.sql} is not usable: ${msg}. Expressions must be deterministic SQL over the columns of ${p.source.table} (no subqueries, random() or 'now').`,
        { cause },
      );
    } finally {
      db.exec(`DROP TABLE IF EXISTS temp.${probe}`);
    }
  }
}

/**
 * Sample values for every source column at once: SQLite's purity check runs
 * when a function is called, and a NULL argument returns before it, so an
 * all-NULL row lets `date(ts, 'localtime')` (the sluice process's time zone)
 * or `strftime('%f', ts)` over a value 'now' (the clock) through. Each row
 * fills every column with one value (the probe table is not STRICT, so any
 * column takes it): a date text, a unix time and a Julian day number. Not
 * the text 'now', for which SQLite's date functions read the clock: that
 * would refuse every date(ts) over a TEXT column, the common case, for a
 * value that rows seldom hold (docs/projections.md says what it does then).
 */
const SAMPLES: readonly { readonly value: string | number; readonly why: string }[] = [
  { value: '2024-06-01 12:00:00', why: 'over a date value' },
  { value: 1717243200, why: 'over a number' },
  { value: 2460463.0, why: 'over a number' },
];

/**
 * Evaluates computed column `c` over each sample row; only SQLite's
 * non-deterministic refusal is an error here (a function that raises on
 * one value, like json() on text that is not JSON, is judged per row at
 * sync time).
 */
function probeSamples(db: Db, p: CompiledProjection, c: { readonly label: string; readonly sql: string }, probe: string): void {
  const names = p.source.columns.map((col) => quoteIdent(col.name));
  const insert = db.prepare(`INSERT INTO temp.${probe} (${names.join(', ')}) VALUES (${names.map(() => '?').join(', ')})`);
  for (const s of SAMPLES) {
    try {
      insert.run(...names.map(() => s.value));
    } catch (cause) {
      const msg = (cause as Error).message;
      if (!/non-deterministic/.test(msg)) continue;
      throw new InvalidInputError(
        'BAD_EXPRESSION',
        `Projection ${p.name}: ${c.label} ${c.sql} is not usable: ${msg.replace('generated columns', 'projection expressions').replace('generated column', 'projection expression')} ${s.why}: its value would depend on the time zone or the clock of the process that syncs, not on the row. Expressions must be deterministic SQL over the columns of ${p.source.table} (no subqueries, random(), 'now', 'localtime' or 'utc').`,
        { cause },
      );
    }
  }
}

/**
 * Names and target tables must be distinct across the projections of one
 * target: `tables`, every table a build of each makes (madeTablesAt, a
 * stored one's madeTables), an FTS5 index's own included.
 */
export function checkCollisions(projections: readonly { readonly name: string; readonly tables: readonly string[] }[]): void {
  const names = new Map<string, string>();
  const tables = new Map<string, string>();
  for (const p of projections) {
    const n = foldIdent(p.name);
    const same = names.get(n);
    if (same !== undefined)
      throw new InvalidInputError(
        'DUPLICATE_PROJECTION',
        same === p.name
          ? `Two projections are named ${p.name}. Give each projection of a target a unique name.`
          : `Projections ${same} and ${p.name} have one name but for case, and projection names compare without case (as SQLite compares table names). Give one of them another name; to rename a projection the target holds only in case, name it as the target does, or remove the old one first (sluice drop TARGET ${same}).`,
      );
    names.set(n, p.name);
    for (const t of p.tables) {
      const other = tables.get(foldIdent(t));
      if (other !== undefined)
        throw new InvalidInputError(
          'TARGET_COLLISION',
          `Projections ${other} and ${p.name} both write target table ${t}. Set a distinct "target" on one of them.`,
        );
      tables.set(foldIdent(t), p.name);
    }
  }
}

/**
 * Target rows are keyed with the key columns' declared collations. A source
 * whose primary key compares a column with another collation
 * (`PRIMARY KEY (name COLLATE BINARY)` on a NOCASE column) can hold two rows
 * that would be one target row ('a' and 'A'): refused for the kinds that key
 * target rows (a custom handler keys its own).
 */
export function checkKeyCollations(db: Db, p: CompiledProjection): void {
  if (!kindOf(p).keysRows) return;
  const pk = primaryKeyCollations(db, p.source.table);
  for (const k of p.source.keyColumns) {
    const declared = p.source.columns.find((c) => c.name === k)?.collate ?? 'BINARY';
    const keyed = pk.get(k);
    if (keyed !== undefined && keyed.toUpperCase() !== declared.toUpperCase()) {
      throw new InvalidInputError(
        'KEY_COLLATION_MISMATCH',
        `Projection ${p.name}: the primary key of ${p.source.table} compares ${k} with COLLATE ${keyed}, but the column is declared COLLATE ${declared}, so two source rows could be one target row. Declare the key with the column's collation, or use a custom projection.`,
      );
    }
  }
}

/**
 * A column copied with a collation the application registers on its own
 * connections (Python's create_collation), not one SQLite builds in: the
 * target's table could not be made with it, nor the rows compared, on
 * sluice's connections (SQLite's bare "no such collation sequence" at every
 * sync). Refused, naming the column and the fix. (enable refuses a key of
 * that kind; this is a column outside the key, or a table captured before.)
 */
export function checkCollationsKnown(db: Db, p: CompiledProjection): void {
  const keyed = primaryKeyCollations(db, p.source.table);
  const used = [
    ...p.columns.map((c) => ({ column: c.from ?? c.name, collate: c.collate, copied: c.from !== undefined })),
    ...[...keyed].map(([column, collate]) => ({ column, collate, copied: true })),
  ];
  for (const u of used) {
    if (u.collate.toUpperCase() === 'BINARY' || collationKnown(db, u.collate)) continue;
    const what = u.copied
      ? `column ${u.column} of ${p.source.table} is declared COLLATE ${u.collate}`
      : `its column ${u.column} is declared COLLATE ${u.collate}`;
    throw new InvalidInputError(
      'COLLATION_UNKNOWN',
      `Projection ${p.name}: ${what}, a collation the application registers on its own connections, not one SQLite builds in; sluice's connections do not have it, so ${p.name} cannot be built or compared with it. Fix: declare ${u.column} with a built-in collation (BINARY, NOCASE or RTRIM) in ${p.source.table}, leave it out of the projection (a map of the other columns), or stop capturing ${p.source.table} (sluice disable SOURCE ${p.source.table}).`,
    );
  }
}

/**
 * An fts5 index's tokenizer is judged by FTS5 when its table is made: a
 * TEMP contentless FTS5 table with the definition's `tokenize`, dropped at
 * once, refuses an unknown tokenizer or option before sync writes anything
 * (else the first build failed with SQLite's bare error and left the
 * definition stored, building). Nothing is written to any database file.
 */
export function probeTokenizer(db: Db, p: CompiledProjection): void {
  if (p.kind !== 'fts5' || p.definition.tokenize === undefined) return;
  const tokenize = p.definition.tokenize;
  const probe = quoteIdent('_sluice_probe_fts');
  try {
    db.exec(`CREATE VIRTUAL TABLE temp.${probe} USING fts5(x, content='', tokenize=${quoteString(tokenize)})`);
  } catch (cause) {
    throw new InvalidInputError(
      'BAD_TOKENIZER',
      `Projection ${p.name}: "tokenize": ${JSON.stringify(tokenize)} is not usable: FTS5 refuses it (${(cause as Error).message}). Name a tokenizer FTS5 has (unicode61, ascii, trigram, or porter followed by one of them) with options it takes, or leave "tokenize" out for unicode61.`,
      { cause },
    );
  } finally {
    db.exec(`DROP TABLE IF EXISTS temp.${probe}`);
  }
}

/**
 * Compiles a definition against its source table as the source database
 * (main on `db`) has it now, with SQLite judging its expressions and the
 * key's collations: what sync and explain both accept. An error names the
 * definition and what to fix.
 */
export function compileAgainstSource(db: Db, def: ProjectionDefinition): CompiledProjection {
  const shape = capturedShape(db, def.source);
  if (shape === undefined) {
    throw new InvalidInputError(
      'UNKNOWN_SOURCE_TABLE',
      `Projection ${def.name}: source table ${def.source} does not exist in the source database. Fix "source" in the definition.`,
    );
  }
  const p = compileProjection(def, shape);
  probeExpressions(db, p);
  probeTokenizer(db, p);
  checkCollationsKnown(db, p);
  checkKeyCollations(db, p);
  return p;
}

/**
 * The shape of source table `table` as capture records it: its columns less
 * those it leaves out of capture (undefined when it is not a table). Every
 * path that reads a captured table's columns from the live source takes
 * them from here (or from the catalog's columns), never from the table's
 * whole column list.
 */
export function capturedShape(db: Db, table: string): SourceShape | undefined {
  const info = describeTable(db, table);
  if (info === undefined || info.kind !== 'table') return undefined;
  return sourceShape(info, excludedColumns(db, info.name));
}
