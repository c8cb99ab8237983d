import type { Db } from '../../../sqlite/index.ts';
import { quoteIdent, renameTable, foldIdent, cachedStatement } from '../../../sqlite/index.ts';
import { InvalidInputError } from '../../../errors.ts';
import type { CompiledMap, CompiledMirror, SourceShape, TargetColumn } from '../../compiled.ts';
import type { ProjectionKind } from '../../kind.ts';
import { applyRelational } from './apply.ts';

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
  | 'apply'
  | 'verification'
> & {
  ownedTables(table: string): string[];
  shadowBuild(): 'copy';
  create(db: Db, schema: string, p: Relational, at: string): void;
  build: ProjectionKind<'mirror'>['build'] & ProjectionKind<'map'>['build'];
  rename(db: Db, schema: string, p: Relational, from: string): void;
  apply: ProjectionKind<'mirror'>['apply'] & ProjectionKind<'map'>['apply'];
  verification: NonNullable<ProjectionKind<'mirror'>['verification']> & NonNullable<ProjectionKind<'map'>['verification']>;
};

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
  checksColumns: true,
  makesTables: true,
  shadowBuild: () => 'copy',
  create(db, schema, p, at) {
    const cols = p.columns.map((c) => `${quoteIdent(c.name)}${c.decl === '' ? '' : ` ${c.decl}`}`);
    const withoutRowid = p.identity && p.source.withoutRowid ? ' WITHOUT ROWID' : '';
    db.exec(
      `CREATE TABLE ${quoteIdent(schema)}.${quoteIdent(at)} (${cols.join(', ')}, PRIMARY KEY (${p.key.map(quoteIdent).join(', ')}))${withoutRowid}`,
    );
  },
  build(db, schema, p: Relational, at) {
    const target = `${quoteIdent(schema)}.${quoteIdent(at)}`;
    const where = p.filter === null ? '' : ` WHERE ${p.filter}`;
    const names = p.columns.map((c) => quoteIdent(c.name)).join(', ');
    const exprs = p.columns.map((c) => c.expr).join(', ');
    let count = 0;
    return {
      async add(rows) {
        for (const part of rows.parts?.() ?? [rows])
          count += cachedStatement(db, `INSERT INTO ${target} (${names}) SELECT ${exprs} FROM ${part.from(p.source.table)}${where}`).run()
            .changes;
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
