import type { Db } from '../../../sqlite/index.ts';
import { quoteIdent, renameTable, foldIdent, cachedStatement } from '../../../sqlite/index.ts';
import { InvalidInputError, SluiceError, errorCode } from '../../../errors.ts';
import type { CompiledMap, CompiledMirror, SourceShape, TargetColumn } from '../../compiled.ts';
import type { ProjectionKind, TableColumns, TableKey } from '../../kind.ts';
import { applyRelational } from './apply.ts';
import { mapExpressions } from './images.ts';

/*
 * What mirror and map share: one table keyed by the source key, filled by
 * SQL over the source rows, and the set-based apply (apply.ts). They differ
 * in their layout only (mirror/, map/).
 */

type Relational = CompiledMirror | CompiledMap;
type Shared = Omit<
  ProjectionKind<'mirror'>,
  | 'kind'
  | 'alter'
  | 'columnsRead'
  | 'reads'
  | 'layout'
  | 'ownedTables'
  | 'shadowBuild'
  | 'create'
  | 'build'
  | 'rename'
  | 'keyedBy'
  | 'tableColumns'
  | 'apply'
  | 'verification'
> & {
  ownedTables(table: string): string[];
  shadowBuild(): 'copy';
  create(db: Db, schema: string, p: Relational, at: string): void;
  build: ProjectionKind<'mirror'>['build'] & ProjectionKind<'map'>['build'];
  rename(db: Db, schema: string, p: Relational, from: string): void;
  keyedBy(p: Relational): readonly TableKey[];
  tableColumns(p: Relational): readonly TableColumns[];
  apply: ProjectionKind<'mirror'>['apply'] & ProjectionKind<'map'>['apply'];
  verification: NonNullable<ProjectionKind<'mirror'>['verification']> & NonNullable<ProjectionKind<'map'>['verification']>;
};

/**
 * The key column of a rowid table that must not become its rowid alias: a
 * single key column declared INTEGER is one in `PRIMARY KEY (k)`, and then
 * holds integers only, but its source column can hold 1.5 or 'abc' where it
 * is no alias of the source's rowid (declared `INTEGER PRIMARY KEY DESC`, a
 * WITHOUT ROWID table's key under a map). SQLite's one form that keeps such
 * a column apart from the rowid is the column's own `PRIMARY KEY DESC`
 * (https://sqlite.org/lang_createtable.html#rowid), the very form of such a
 * source, which the mirror then copies.
 */
function keyNotAlias(p: Relational): TargetColumn | undefined {
  if (p.key.length !== 1) return undefined;
  const key = p.columns.find((c) => foldIdent(c.name) === foldIdent(p.key[0] ?? ''));
  if (
    key === undefined ||
    key.decl
      .replace(/\s+COLLATE\s+\S+$/i, '')
      .trim()
      .toUpperCase() !== 'INTEGER'
  )
    return undefined;
  const fromAlias = p.source.rowidAlias && !p.source.withoutRowid && foldIdent(key.from ?? '') === foldIdent(p.source.keyColumns[0] ?? '');
  return fromAlias ? undefined : key;
}

/**
 * Whether a mirror batch that touches each key once is tried on the plain
 * path first (relational/plain.ts). Off only to measure what it saves
 * (bench/apply.ts): the rows and verdicts come out the same either way.
 */
export const plainPath = { on: true };

export const relationalTable: Shared = {
  ownedTables: (table) => [table],
  needsImages: true,
  defaultBatch: 100_000,
  keysRows: true,
  foreignUnique: 'guard',
  uniqueTables: (table) => [table],
  rowTable: (table) => table,
  // One table, declared column by column as create() below declares it.
  tableColumns: (p) => [{ table: p.targetTable, columns: p.columns.map((c) => ({ name: c.name, type: c.type, collate: c.collate })) }],
  // Its writes replace a row by the key (INSERT OR REPLACE).
  keyedBy: (p) => [
    { table: p.targetTable, key: p.key, uses: 'which sync replaces rows by', without: 'a sync would add a second row for a key' },
  ],
  makesTables: true,
  shadowBuild: () => 'copy',
  create(db, schema, p, at) {
    const rowidTable = !(p.identity && p.source.withoutRowid);
    const inlineKey = rowidTable ? keyNotAlias(p) : undefined;
    const cols = p.columns.map(
      (c) => `${quoteIdent(c.name)}${c.decl === '' ? '' : ` ${c.decl}`}${c === inlineKey ? ' PRIMARY KEY DESC' : ''}`,
    );
    const key = inlineKey === undefined ? `, PRIMARY KEY (${p.key.map(quoteIdent).join(', ')})` : '';
    db.exec(`CREATE TABLE ${quoteIdent(schema)}.${quoteIdent(at)} (${cols.join(', ')}${key})${rowidTable ? '' : ' WITHOUT ROWID'}`);
  },
  build(db, schema, p: Relational, at) {
    const target = `${quoteIdent(schema)}.${quoteIdent(at)}`;
    const where = p.filter === null ? '' : ` WHERE ${p.filter}`;
    const names = p.columns.map((c) => quoteIdent(c.name)).join(', ');
    const exprs = p.columns.map((c) => c.expr).join(', ');
    let count = 0;
    return {
      async add(rows) {
        for (const part of rows.parts?.() ?? [rows]) {
          const from = part.from(p.source.table);
          // (Cached: a protected rebuild copies its chunks through the same FROM item, one statement per chunk.)
          try {
            count += cachedStatement(
              db,
              copiesWhole(db, p, from)
                ? `INSERT INTO ${target} SELECT * FROM ${from}`
                : `INSERT INTO ${target} (${names}) SELECT ${exprs} FROM ${from}${where}`,
            ).run().changes;
          } catch (err) {
            throw raisedInBuild(db, p, from, err);
          }
        }
      },
      finish: async () => count,
    };
  },
  rename(db, schema, p, from) {
    renameTable(db, schema, from, p.targetTable);
  },
  async apply(db, schema, p: Relational, batch, strict) {
    const r = applyRelational(db, schema, p, batch.relation(), plainPath.on ? 'auto' : 'grouped', strict);
    return { applied: r.transitions, ...(r.mismatch === undefined ? {} : { mismatch: r.mismatch }) };
  },
  verification: {
    target: (schema, p: Relational) => ({
      from: `${quoteIdent(schema)}.${quoteIdent(p.targetTable)}`,
      keys: p.key.map(quoteIdent),
      values: p.columns.map((c) => quoteIdent(c.name)),
    }),
    sourceValues: (p: Relational) => p.columns.map((c) => c.expr),
  },
};

/**
 * A snapshot build that failed in SQLite because one of the map's
 * expressions or its filter raised on a source row (json() of text that is
 * not JSON): EXPRESSION_FAILED naming which one, on which table (the next
 * sync reads the source again, so fixing the row is the repair). Any other
 * error is returned as it is.
 */
function raisedInBuild(db: Db, p: Relational, from: string, err: unknown): unknown {
  if (err instanceof SluiceError || errorCode(err) !== 'SQLITE_ERROR' || p.identity) return err;
  for (const e of mapExpressions(p)) {
    try {
      db.prepare(`SELECT count(${e.sql}) FROM ${from}`).get();
    } catch (raised) {
      return new SluiceError(
        'EXPRESSION_FAILED',
        `${e.what} ${e.expr} raised "${raised instanceof Error ? raised.message : String(raised)}" on a row of ${p.source.table}, so the projection cannot be built. Fix the value in ${p.source.table}, or make the expression total (CASE WHEN json_valid(x) THEN json(x) END, say) and pass the definition with --projection, then sync again.`,
        { cause: err },
      );
    }
  }
  return err;
}

/**
 * Whether the rows of `from` are the target table's rows column for column
 * (a mirror, or a map that renames nothing, unfiltered): then the copy is
 * `INSERT INTO target SELECT * FROM from`, the one shape SQLite copies
 * record by record without decoding them (its transfer optimization, taken
 * when both tables declare the same affinities, collations and keys, as a
 * mirror's do; otherwise SQLite copies row by row, to the same rows). About
 * a fifth less time for a large first build.
 */
function copiesWhole(db: Db, p: Relational, from: string): boolean {
  if (p.filter !== null) return false;
  // (Prepared afresh: a cached statement keeps the columns it was prepared with until it runs again.)
  const star = db.prepare(`SELECT * FROM ${from}`).columns();
  return star.length === p.columns.length && p.columns.every((c, i) => c.name === star[i]?.name && c.expr === quoteIdent(c.name));
}

/** The target key: the source key, carried by plain copies (so it is exact and non-NULL). */
export function keyColumnsOf(projection: string, source: SourceShape, columns: readonly TargetColumn[]): string[] {
  return source.keyColumns.map((k) => {
    const col = columns.find((c) => c.from !== undefined && foldIdent(c.from) === foldIdent(k));
    if (col === undefined) {
      throw new InvalidInputError(
        'MISSING_KEY',
        `Projection ${projection}: the map must include the source key column ${k} of ${source.table} as a plain column (e.g. "${k}": "${k}"), so target rows keep the source identity.`,
      );
    }
    return col.name;
  });
}
