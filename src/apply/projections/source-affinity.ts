import {
  affinityMisfits,
  affinityOf,
  declaredType,
  foldIdent,
  quoteIdent,
  quoteString,
  type AffinityMisfit,
  type Db,
} from '../../sqlite/index.ts';
import type { CompiledProjection, SourceShape } from '../../projection/index.ts';
import type { ProjectionRecord } from '../target/index.ts';
import { suspension, type Suspension } from './applier.ts';

/*
 * A source column that holds values its own declared type would store in
 * another class (sqlite/affinity.ts: its declaration changed in place,
 * with PRAGMA writable_schema, and its rows were not written again). A
 * mirror or a map declares its columns as the source does, so a copy of
 * such a value is not the source's: a rebuild would store the TEXT '1' of a
 * column now declared INTEGER as the INTEGER 1, exit 0, and verify then
 * find the rows different, which no rebuild repairs. So a rebuild over a
 * column whose declared type changed its affinity since the projection was
 * built reads the column's values first (a reinit too, over such a
 * suspension), and suspends the projection with SOURCE_AFFINITY when it
 * holds any, keeping its rows; verify, when it finds rows different, asks
 * the same of every column the projection reads, and says that instead of
 * a hand edit. The repair is in the source: write the values again through
 * their declared type (UPDATE t SET c = c: the capture journals each value
 * it changes), or declare the column as it was; then a rebuild.
 */

export const SOURCE_AFFINITY = 'SOURCE_AFFINITY';

/** The source columns `p` reads whose values its target stores through their declared type: a mirror's or a map's (undefined for other kinds). */
function copiedColumns(p: CompiledProjection): CompiledProjection['source']['columns'] | undefined {
  if (p.kind !== 'mirror' && p.kind !== 'map') return undefined;
  const reads = p.reads === undefined ? undefined : new Set(p.reads.map(foldIdent));
  return p.source.columns.filter((c) => reads === undefined || reads.has(foldIdent(c.name)));
}

/**
 * Before a rebuild of `p` over its stored row `rec`: the suspension when a
 * column it reads, whose declared type has another affinity than when `rec`
 * was built (or that a stored SOURCE_AFFINITY names), holds values that
 * type would store otherwise. Reads nothing when no such column is there.
 */
export function sourceAffinityGate(db: Db, p: CompiledProjection, rec: ProjectionRecord): Suspension | undefined {
  const columns = copiedColumns(p);
  if (columns === undefined) return undefined;
  let built: SourceShape | undefined;
  try {
    built = JSON.parse(rec.sourceShape) as SourceShape;
  } catch {
    built = undefined;
  }
  const before = new Map((built?.columns ?? []).map((c) => [foldIdent(c.name), affinityOf(declaredType(c))]));
  const named = new Set(
    rec.reason === SOURCE_AFFINITY && Array.isArray(rec.detail?.columns)
      ? rec.detail.columns.filter((c): c is string => typeof c === 'string').map(foldIdent)
      : [],
  );
  const suspect = columns.filter((c) => {
    const was = before.get(foldIdent(c.name));
    return named.has(foldIdent(c.name)) || (was !== undefined && was !== affinityOf(declaredType(c)));
  });
  if (suspect.length === 0) return undefined;
  const found = misfitsOf(db, p, suspect);
  return found.length === 0 ? undefined : suspension(SOURCE_AFFINITY, { ...sourceAffinityDetail(p, found) });
}

/** Every column `p` reads that holds values its declared type would store otherwise (none for a kind other than mirror and map). */
export function sourceMisfits(db: Db, p: CompiledProjection): AffinityMisfit[] {
  const columns = copiedColumns(p);
  return columns === undefined ? [] : misfitsOf(db, p, columns);
}

function misfitsOf(db: Db, p: CompiledProjection, columns: CompiledProjection['source']['columns']): AffinityMisfit[] {
  return affinityMisfits(
    db,
    'main',
    p.source.table,
    columns.map((c) => ({ name: c.name, type: declaredType(c) })),
    p.source.keyColumns,
  );
}

/** What a SOURCE_AFFINITY suspension records (and verify reports): the table, its columns, the statement that writes their values again, and the message. */
export interface SourceAffinityDetail {
  readonly table: string;
  readonly columns: readonly string[];
  /** Per column: its affinity, how many of its values, their classes, and one of them (an SQL literal) with its row's key. */
  readonly misfits: readonly AffinityMisfit[];
  /** UPDATE t SET c = c WHERE ...: run in the source, each value is stored again as its column's declared type stores it. */
  readonly rewrite: string;
  readonly message: string;
}

export function sourceAffinityDetail(p: CompiledProjection, found: readonly AffinityMisfit[]): SourceAffinityDetail {
  const table = p.source.table;
  const declared = new Map(p.source.columns.map((c) => [c.name, declaredType(c)]));
  const each = found.map(
    (m) =>
      `${m.column} (declared ${declared.get(m.column) ?? ''}, so ${m.affinity} affinity): ${m.count} ${m.classes.join('/').toUpperCase()} value${m.count === 1 ? '' : 's'}, e.g. ${m.value} at ${p.source.keyColumns.map((k, i) => `${k} = ${JSON.stringify(m.key[i] ?? null)}`).join(', ')}`,
  );
  return {
    table,
    columns: found.map((m) => m.column),
    misfits: found,
    rewrite: rewriteStatement(table, found),
    message: `source table ${table} holds values that the declared types of their columns would store in another class (a declaration changed without the rows written again), so no copy of them in ${p.name}, whose columns are declared the same, can hold them as they are: ${each.join('; ')}`,
  };
}

/** UPDATE t SET c = c ... over the rows that hold such values: each is stored again as its column's declared type stores it. */
function rewriteStatement(table: string, found: readonly AffinityMisfit[]): string {
  const set = found.map((m) => `${quoteIdent(m.column)} = ${quoteIdent(m.column)}`).join(', ');
  const where = found.map((m) => `typeof(${quoteIdent(m.column)}) IN (${m.classes.map(quoteString).join(', ')})`).join(' OR ');
  return `UPDATE ${quoteIdent(table)} SET ${set} WHERE ${where}`;
}
