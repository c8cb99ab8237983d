import { createHash } from 'node:crypto';
import type { Db } from '../sqlite/connection.ts';
import { quoteIdent } from '../sqlite/quote.ts';
import { cachedStatement } from '../sqlite/statement-cache.ts';
import { workTable } from '../sqlite/work-tables.ts';
import { primaryKeyCollations } from '../sqlite/introspect.ts';
import { fromJsonValue, placeholderFor, toBindable, toJsonValue, type JsonValue, type SqlValue } from '../sqlite/codec.ts';
import type { CapturedTable } from '../capture/catalog.ts';
import { journalEvents } from '../feed/event-relation.ts';
import { cursorToken, type SourceView } from '../feed/source-view.ts';
import { batchEnd } from '../feed/batch.ts';
import { columnDecl, type CompiledProjection } from '../projection/compile.ts';
import { kindOf } from '../projection/kinds/registry.ts';
import { newProjectionRecord, ownedTables, PROJECTIONS_TABLE, storeCursor, type ProjectionRecord } from './target-meta.ts';
import { checkTablesFree, ownedBy, type ApplyTarget } from './applier.ts';
import { restoreIndexes, userIndexes, type DroppedIndex } from './user-indexes.ts';

/*
 * A protected rebuild of a live projection (reference 003, "Protected
 * rebuild"), in bounded target transactions, so that a follower of another
 * projection on the same target and readers of this one are never blocked
 * for the whole build:
 *
 *  1. the build intent and the new definition are recorded in the
 *     projection's row (`build`), beside its live definition and cursor;
 *  2. shadow tables are filled from the source table in key order, one
 *     chunk per transaction (each chunk as the source is at its read);
 *  3. the shadow catches up to the high-water mark: every key the journal
 *     touched after the build started is read again from the source, in
 *     bounded steps (a key untouched since then is as its chunk copied it);
 *  4. the whole candidate is validated against the source at one seq, in a
 *     read transaction (verify's checksums, rows, keys);
 *  5. atomicSwapShadow: in one transaction, the last catch-up, the old
 *     tables dropped, the shadow renamed in, the user's indexes made again,
 *     and the new definition, fingerprint and cursor stored together;
 *  6. the build state goes with that commit.
 *
 * Readers see the old projection, whole, until the swap commits, and the
 * new one after it. A build interrupted at any point resumes on the next
 * run, or is rolled back (resumeOrRollbackShadowBuild).
 */

/** What the projection's row records of a build in progress. */
export interface BuildState {
  readonly fingerprint: string;
  readonly definition: string;
  readonly shape: string;
  /** Why it is rebuilt (DEFINITION_CHANGED, REINIT...). */
  readonly reason: string;
  readonly shadow: string;
  /** The source's high-water mark when the build started: events after it are caught up. */
  readonly startSeq: number;
  /** The last key copied (null: none yet); undefined once the copy is done. */
  readonly lastKey?: readonly JsonValue[] | null;
  readonly copied: number;
  /** Events caught up through this seq (the copy phase: startSeq). */
  readonly caughtSeq: number;
}

/** Rows copied per transaction, and events caught up per transaction. */
export const BUILD_CHUNK = 20_000;

export function readBuild(rec: ProjectionRecord | undefined): BuildState | undefined {
  return rec?.build == null ? undefined : (JSON.parse(rec.build) as BuildState);
}

export function writeBuild(t: ApplyTarget, name: string, b: BuildState | null): void {
  cachedStatement(t.db, `UPDATE ${quoteIdent(t.schema)}.${PROJECTIONS_TABLE} SET build = ? WHERE name = ?`).run(
    b === null ? null : JSON.stringify(b),
    name,
  );
}

/** Whether `p` can be rebuilt in bounded steps: its kind's rows are keyed by the source key, one table (mirror, map). */
export function buildsInSteps(p: CompiledProjection): boolean {
  return kindOf(p).boundedBuild;
}

function shadowOf(p: CompiledProjection): string {
  return `_sluice_build_${createHash('sha256').update(`${p.name}\0${p.fingerprint}`).digest('hex').slice(0, 12)}`;
}

/** Records the build intent and makes the (empty) shadow tables, in the caller's transaction. */
export function startShadowBuild(
  t: ApplyTarget,
  p: CompiledProjection,
  view: SourceView,
  reason: string,
  previous: readonly string[],
): BuildState {
  const kind = kindOf(p);
  const shadow = shadowOf(p);
  checkTablesFree(t, p, previous);
  dropShadow(t, p.kind, shadow);
  kind.create(t.db, t.schema, p, shadow);
  const rec = newProjectionRecord(p, t.sourceId, t.sourcePath, 'building');
  const b: BuildState = {
    fingerprint: p.fingerprint,
    definition: rec.definition,
    shape: rec.sourceShape,
    reason,
    shadow,
    startSeq: view.hw,
    lastKey: null,
    copied: 0,
    caughtSeq: view.hw,
  };
  writeBuild(t, p.name, b);
  return b;
}

/**
 * resumeOrRollbackShadowBuild: a build found in the row is resumed when it
 * builds this very definition, and its journal is still there to catch up
 * from; otherwise its shadow is dropped and its state cleared (the live
 * projection was never touched). Returns the build to continue, if any.
 */
export function resumeOrRollbackShadowBuild(
  t: ApplyTarget,
  p: CompiledProjection,
  rec: ProjectionRecord,
  prunedThrough: number,
): BuildState | undefined {
  const b = readBuild(rec);
  if (b === undefined) return undefined;
  if (b.fingerprint === p.fingerprint && b.caughtSeq >= prunedThrough) return b;
  dropShadow(t, p.kind, b.shadow);
  writeBuild(t, p.name, null);
  return undefined;
}

export function dropShadow(t: ApplyTarget, kind: string, shadow: string): void {
  for (const x of ownedTables(kind, shadow)) t.db.exec(`DROP TABLE IF EXISTS ${quoteIdent(t.schema)}.${quoteIdent(x)}`);
}

/** Copies the next chunk of source rows in key order into the shadow; the build state after it. */
export async function copyChunk(t: ApplyTarget, p: CompiledProjection, table: CapturedTable, b: BuildState): Promise<BuildState> {
  const { db } = t;
  const keys = p.source.keyColumns;
  const pk = primaryKeyCollations(db, p.source.table);
  const keyed = keys.map((k) => `${quoteIdent(k)}${pk.has(k) ? ` COLLATE ${pk.get(k) as string}` : ''}`);
  const decl = p.source.columns.map((c) => `${quoteIdent(c.name)} ${columnDecl(c)}`).join(', ');
  const chunk = workTable(db, '_sluice_chunk', decl);
  cachedStatement(db, `DELETE FROM ${chunk}`).run();
  const names = p.source.columns.map((c) => quoteIdent(c.name)).join(', ');
  const last = (b.lastKey ?? null)?.map((v) => fromJsonValue(v));
  const after = last === undefined ? '' : ` WHERE (${keyed.join(', ')}) > (${last.map(placeholderFor).join(', ')})`;
  const n = cachedStatement(
    db,
    `INSERT INTO ${chunk} (${names}) SELECT ${names} FROM main.${quoteIdent(table.name)}${after} ORDER BY ${keyed.join(', ')} LIMIT ${BUILD_CHUNK}`,
  ).run(...(last ?? []).map(toBindable)).changes;
  const build = kindOf(p).build(db, t.schema, p, b.shadow);
  await build.add({ from: (alias) => `${chunk} AS ${quoteIdent(alias)}`, rows: () => [] });
  const copied = b.copied + (await build.finish());
  if (n < BUILD_CHUNK) return { ...b, lastKey: undefined, copied };
  const lastRow = db
    .prepare(`SELECT ${keys.map(quoteIdent).join(', ')} FROM ${chunk} ORDER BY ${keyed.join(', ')} DESC LIMIT 1`)
    .raw()
    .safeIntegers(true)
    .get() as SqlValue[];
  return { ...b, lastKey: lastRow.map((v) => toJsonValue(v)), copied };
}

/**
 * Reads again from the source every key the journal touched in (lo, hi]
 * (old and new keys): deleted from the shadow, and built again from the
 * source rows that have it now.
 */
export async function catchUp(
  t: ApplyTarget,
  p: CompiledProjection,
  table: CapturedTable,
  shadow: string,
  lo: number,
  hi: number,
): Promise<void> {
  if (hi <= lo) return;
  const { db } = t;
  const kind = kindOf(p);
  const ev = journalEvents(table.tid, table.columns.length, lo, hi);
  const pos = p.source.keyColumns.map((k) => table.columns.indexOf(k));
  const tk = pos.map((_, i) => `k${i}`).join(', ');
  const touched = workTable(db, '_sluice_touched', tk);
  cachedStatement(db, `DELETE FROM ${touched}`).run();
  const k = (side: 'before' | 'after') => pos.map((x, i) => `${ev[side]('', x)} AS k${i}`).join(', ');
  cachedStatement(
    db,
    `INSERT INTO ${touched} SELECT ${k('before')} FROM (${ev.sql}) WHERE ${ev.hasBefore('')} UNION SELECT ${k('after')} FROM (${ev.sql}) WHERE ${ev.hasAfter('')}`,
  ).run(ev.params);
  const rows = kind.rowTable(shadow);
  if (rows === undefined) throw new Error(`projection ${p.name}: kind ${p.kind} has no row table to catch up`);
  db.exec(
    `DELETE FROM ${quoteIdent(t.schema)}.${quoteIdent(rows)} WHERE (${p.key.map(quoteIdent).join(', ')}) IN (SELECT ${tk} FROM ${touched})`,
  );
  const src = `main.${quoteIdent(table.name)}`;
  const keys = p.source.keyColumns.map(quoteIdent).join(', ');
  const build = kind.build(db, t.schema, p, shadow);
  await build.add({
    from: (alias) => `(SELECT * FROM ${src} WHERE (${keys}) IN (SELECT ${tk} FROM ${touched})) AS ${quoteIdent(alias)}`,
    rows: () => [],
  });
  await build.finish();
}

/** Events caught up per step of the catch-up phase: the next range, of at most BUILD_CHUNK events of the table. */
export function catchUpEnd(db: Db, table: CapturedTable, from: number, hw: number): number {
  return batchEnd(db, table.tid, from, hw, BUILD_CHUNK);
}

/**
 * atomicSwapShadow: in the caller's transaction, the shadow (caught up to
 * `hw`) replaces the projection: the old tables dropped, the shadow's
 * renamed in, the user's indexes on the old ones made again, and the new
 * definition, fingerprint and cursor stored with the build state cleared.
 */
export function atomicSwapShadow(
  t: ApplyTarget,
  p: CompiledProjection,
  rec: ProjectionRecord,
  b: BuildState,
  view: SourceView,
  table: CapturedTable,
): { readonly cursor: string; readonly droppedIndexes: readonly DroppedIndex[] } {
  const { db, schema } = t;
  const old = ownedBy(rec);
  const indexes = userIndexes(db, schema, old);
  for (const x of old) db.exec(`DROP TABLE IF EXISTS ${quoteIdent(schema)}.${quoteIdent(x)}`);
  kindOf(p).rename(db, schema, p, b.shadow);
  const droppedIndexes = restoreIndexes(db, schema, indexes);
  cachedStatement(
    db,
    `UPDATE ${quoteIdent(schema)}.${PROJECTIONS_TABLE} SET source_id = ?, source_path = ?, source_table = ?, definition = ?, source_shape = ?, fingerprint = ?, kind = ?, target_table = ?, build = NULL WHERE name = ?`,
  ).run(t.sourceId, t.sourcePath, p.source.table, b.definition, b.shape, b.fingerprint, p.kind, p.targetTable, p.name);
  const cursor = cursorToken(db, view, [table], view.hw);
  storeCursor(db, schema, p.name, cursor, view.hw, 0, null);
  return { cursor, droppedIndexes };
}
