import { createHash, randomUUID } from 'node:crypto';
import { quoteIdent, cachedStatement, scrubbing } from '../../sqlite/index.ts';
import type { CapturedTable } from '../../capture/index.ts';
import { cursorToken, type SourceView } from '../../feed/index.ts';
import { stagedCopyOf, type CompiledProjection, kindOf, losesColumn } from '../../projection/index.ts';
import type { KindName } from '../../projection/index.ts';
import {
  newProjectionRecord,
  PROJECTIONS_TABLE,
  storeCursor,
  type ProjectionRecord,
  buildTables,
  readBuild,
  shadowBuildOf,
  restoreIndexes,
  restoreTriggers,
  userIndexes,
  userTriggers,
  type DroppedIndex,
  type DroppedTrigger,
} from '../target/index.ts';
import type { BuildState } from '../target/index.ts';
import { checkTablesFree, replacedTables, type ApplyTarget } from '../projections/index.ts';
import { retireTables } from './retired-tables.ts';

/*
 * A protected rebuild of a live projection (reference 003, "Protected
 * rebuild"), in bounded target transactions, so that a follower of another
 * projection on the same target and readers of this one are never blocked
 * for the whole build:
 *
 *  1. the build intent and the new definition are recorded in the
 *     projection's row (`build`), beside its live definition and cursor;
 *  2. rows are copied from the source table in key order, one chunk per
 *     transaction (each chunk as the source is at its read) (shadow-fill.ts):
 *     - a `copy` kind (mirror, map) into its shadow tables;
 *     - a `replay` kind (fts5, a custom handler that declares its tables)
 *       into a staged copy of the source rows beside them (a mirror);
 *  3. that copy catches up to the high-water mark: every key the journal
 *     touched after the build started is read again from the source, in
 *     bounded steps (a key untouched since then is as its chunk copied it);
 *  4. the copy is validated against the source at one seq, in a read
 *     transaction (verify's checksums, rows, keys), unless the syncer that
 *     started the build has watched the target's log since and seen no
 *     other program write its tables (build-step.ts, BuildWatch);
 *  5. a replay kind's shadow is then filled from the staged copy (caught up
 *     to the high-water mark read in that transaction) in key-ordered parts,
 *     one per transaction, and caught up by applying the journal's events
 *     after it, in bounded batches, as sync applies them to the live one;
 *  6. atomicSwapShadow: in one transaction, the last catch-up, the old
 *     tables renamed away (retired), the shadow renamed in, the user's
 *     indexes and triggers made again (a trigger is never on a shadow: the
 *     copy and its catch-ups fire none), and the new definition, fingerprint and cursor
 *     stored together; the staged copy (retired too) and the build state
 *     go with that commit;
 *  7. the retired tables are dropped, one per transaction
 *     (retired-tables.ts): a drop walks every page of its table.
 *
 * Readers see the old projection, whole, until the swap commits, and the
 * new one after it. A build interrupted at any point resumes on the next
 * run, or is rolled back (resumeOrRollbackShadowBuild).
 */

export type { BuildState } from '../target/index.ts';

/**
 * Rows copied per transaction, and events caught up per transaction.
 * SLUICE_BUILD_CHUNK in the environment sets another size for the process
 * (like SLUICE_CRASH_AT, a hook for the tests: they cross chunk boundaries
 * with a few thousand rows, not tens of thousands). Unset in normal use.
 */
export const BUILD_CHUNK = buildChunk(process.env.SLUICE_BUILD_CHUNK);

function buildChunk(env: string | undefined): number {
  if (env === undefined) return 20_000;
  if (!/^[1-9][0-9]{0,8}$/.test(env)) throw new Error(`SLUICE_BUILD_CHUNK=${env}: not a whole number of rows from 1 to 999999999`);
  return Number(env);
}

export function writeBuild(t: ApplyTarget, name: string, b: BuildState | null): void {
  cachedStatement(t.db, `UPDATE ${quoteIdent(t.schema)}.${PROJECTIONS_TABLE} SET build = ? WHERE name = ?`).run(
    b === null ? null : JSON.stringify(b),
    name,
  );
}

function shadowOf(p: CompiledProjection): string {
  return `_sluice_build_${createHash('sha256').update(`${p.name}\0${p.fingerprint}`).digest('hex').slice(0, 12)}`;
}

/** Where the build's rows are copied to: the shadow itself (a copy kind) or its staged copy of the source rows (a replay kind). */
export function copyTarget(p: CompiledProjection, b: BuildState): { readonly p: CompiledProjection; readonly at: string } {
  return b.staging === undefined ? { p, at: b.shadow } : { p: stagedCopyOf(p, b.staging), at: b.staging };
}

/** What step 4 validates: the copy (its tables at `table`), as a stored projection of its own definition would be. */
export interface BuildCandidate {
  readonly kind: KindName;
  readonly table: string;
  readonly definition: string;
  readonly shape: string;
  readonly fingerprint: string;
  readonly seq: number;
}

export function validationCandidate(p: CompiledProjection, b: BuildState): BuildCandidate {
  if (b.staging === undefined)
    return { kind: p.kind, table: b.shadow, definition: b.definition, shape: b.shape, fingerprint: b.fingerprint, seq: b.caughtSeq };
  const m = stagedCopyOf(p, b.staging);
  return {
    kind: m.kind,
    table: b.staging,
    definition: JSON.stringify(m.definition),
    shape: b.shape,
    fingerprint: m.fingerprint,
    seq: b.caughtSeq,
  };
}

/** Records the build intent and makes the (empty) shadow tables, in the caller's transaction. */
export function startShadowBuild(
  t: ApplyTarget,
  p: CompiledProjection,
  view: SourceView,
  reason: string,
  previous: readonly string[],
): BuildState {
  const shadow = shadowOf(p);
  checkTablesFree(t, p, previous);
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
    ...(shadowBuildOf(p) === 'replay' ? { staging: `${shadow}_rows` } : {}),
    cursor: buildCursor(t, view, p, view.hw),
    token: randomUUID(),
  };
  dropShadow(t, b);
  kindOf(p).create(t.db, t.schema, p, shadow);
  const copy = copyTarget(p, b);
  if (b.staging !== undefined) kindOf(copy.p).create(t.db, t.schema, copy.p, copy.at);
  writeBuild(t, p.name, b);
  return b;
}

/** The cursor a build keeps (BuildState.cursor) once it has read the journal through `seq`. */
export function buildCursor(t: ApplyTarget, view: SourceView, p: CompiledProjection, seq: number): string {
  const table = view.tables.get(p.source.table)?.table;
  return table === undefined ? '' : cursorToken(t.db, view, [table], seq);
}

/**
 * resumeOrRollbackShadowBuild: a build found in the row is resumed when it
 * builds this very definition (for a staged copy, which holds every column,
 * over the very same source shape), and its journal is still there to
 * catch up from; otherwise its shadow is dropped and its state cleared (the live
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
  const same = b.fingerprint === p.fingerprint && (b.staging === undefined || b.shape === JSON.stringify(p.source));
  if (same && (b.fill?.seq ?? b.caughtSeq) >= prunedThrough) return b;
  // A build begun before a column it copies was left out of capture: its tables hold the column.
  dropShadow(t, b, losesColumn(b.shape, p.source));
  writeBuild(t, p.name, null);
  return undefined;
}

/** Drops a build's shadow tables and staged copy (`scrub`: they may hold a column left out of capture since: sqlite/scrub.ts). */
export function dropShadow(t: ApplyTarget, b: BuildState, scrub = false): void {
  const drop = () => {
    for (const x of buildTables(b)) t.db.exec(`DROP TABLE IF EXISTS ${quoteIdent(t.schema)}.${quoteIdent(x)}`);
  };
  if (scrub) scrubbing(t.db, t.schema, drop);
  else drop();
}

/**
 * atomicSwapShadow: in the caller's transaction, the shadow (caught up to
 * `hw`) replaces the projection: the old tables (and a staged copy) retired
 * (renamed away, dropped later, each in a transaction of its own:
 * retired-tables.ts), the shadow's renamed in, the user's indexes and triggers on the old ones made again
 * (user-indexes.ts, user-triggers.ts), and the new definition, fingerprint and cursor stored with the build
 * state cleared.
 */
export function atomicSwapShadow(
  t: ApplyTarget,
  p: CompiledProjection,
  rec: ProjectionRecord,
  b: BuildState,
  view: SourceView,
  table: CapturedTable,
): { readonly cursor: string; readonly droppedIndexes: readonly DroppedIndex[]; readonly droppedTriggers: readonly DroppedTrigger[] } {
  const { db, schema } = t;
  const old = replacedTables(rec, p);
  // Free when the build started, but a user may have made a table of a new name since: refused by name, not by a raw rename error.
  checkTablesFree(t, p, old);
  const indexes = userIndexes(db, schema, old);
  // Read before the old tables are retired: their triggers are dropped with them (retired-tables.ts).
  const triggers = userTriggers(db, schema, old);
  // Renamed out of the way, not dropped: a drop frees every page with the lock held (retired-tables.ts).
  // Tables of a definition that read a column left out of capture since: their drop is scrubbed (retired-tables.ts).
  retireTables(db, schema, [...old, ...(b.staging === undefined ? [] : [b.staging])], indexes, losesColumn(rec.sourceShape, p.source));
  kindOf(p).rename(db, schema, p, b.shadow);
  const droppedIndexes = restoreIndexes(db, schema, indexes);
  const droppedTriggers = restoreTriggers(db, schema, triggers);
  cachedStatement(
    db,
    `UPDATE ${quoteIdent(schema)}.${PROJECTIONS_TABLE} SET source_id = ?, source_path = ?, source_table = ?, definition = ?, source_shape = ?, fingerprint = ?, kind = ?, target_table = ?, build = NULL WHERE name = ?`,
  ).run(t.sourceId, t.sourcePath, p.source.table, b.definition, b.shape, b.fingerprint, p.kind, p.targetTable, p.name);
  const cursor = cursorToken(db, view, [table], view.hw);
  storeCursor(db, schema, p.name, cursor, view.hw, 0, null);
  return { cursor, droppedIndexes, droppedTriggers };
}
