import type { Db } from '../sqlite/connection.ts';
import { quoteIdent } from '../sqlite/quote.ts';
import { FailClosedError, InvalidInputError } from '../errors.ts';
import { reasonsOf } from '../reasons.ts';
import { JOURNAL_TABLE, journalRange, julianToMs, type EventRelation } from '../capture/schema.ts';
import { readState, type CapturedTable } from '../capture/catalog.ts';
import { validateCursor } from '../feed/validate.ts';
import { matchesSourceAt } from './verify.ts';
import { cursorToken, readSourceView, type SourceView } from '../feed/source-view.ts';
import { batchEnd, readEventsInRange } from '../feed/batch.ts';
import type { SqlValue } from '../sqlite/codec.ts';
import { pagedTable } from '../feed/snapshot.ts';
import type { Row } from '../feed/events.ts';
import type { CompiledProjection } from '../projection/compile.ts';
import { applyRelational, createRelationalTarget, dropTemps, snapshotRelational } from '../projection/kinds/relational.ts';
import { foreignUniqueIndexOf, ftsUniqueMessage, hasForeignUniqueIndex } from '../projection/foreign-unique.ts';
import { applyFtsEvents, createFtsTarget, snapshotFts } from '../projection/kinds/fts5.ts';
import { applyFtsNet } from '../projection/kinds/fts5-net.ts';
import { applyCustomEvents, initCustom } from '../projection/kinds/custom.ts';
import {
  SELF_CLEARING_SUSPENSIONS,
  shellWord,
  insertProjection,
  newProjectionRecord,
  ownedTables,
  readProjection,
  setState,
  storeCursor,
  PROJECTIONS_TABLE,
  TARGET_INFO_TABLE,
  type ProjectionRecord,
} from './target-meta.ts';
import { crashPoint } from './crash-points.ts';
import { markBusy } from './retry.ts';
import { restoreIndexes, userIndexes, type DroppedIndex } from './user-indexes.ts';
import { cachedStatement } from '../sqlite/statement-cache.ts';

/** The outcome of one transaction for one projection. */
export type StepOutcome =
  | {
      readonly kind: 'initialized';
      readonly rows: number;
      readonly seq: number;
      readonly cursor: string;
      readonly reason?: string;
      readonly droppedIndexes?: readonly DroppedIndex[];
    }
  | { readonly kind: 'applied'; readonly events: number; readonly seq: number; readonly cursor: string; readonly caughtUp: boolean }
  | { readonly kind: 'current'; readonly seq: number; readonly cursor: string }
  | {
      readonly kind: 'suspended';
      readonly reason: string;
      readonly detail: Record<string, unknown>;
      /** The stored suspension, as it is: nothing to write. */ readonly unchanged?: true;
    };

/** Events read into memory at a time when a batch is applied event by event. */
const EVENT_PAGE = 10_000;

/** Rebuild reasons that a fresh snapshot repairs (kind `rebuilt` in src/reasons.ts); the others need the source fixed first. */
const REBUILDABLE: ReadonlySet<string> = reasonsOf('rebuilt');

export interface StepContext {
  readonly db: Db;
  readonly schema: string;
  readonly sourcePath: string;
  readonly batchSize: number;
  /**
   * An explicit batch (fromSeq, toSeq]: already applied is a no-op, an
   * overlap applies only the part after the stored cursor, a gap (fromSeq
   * after the stored cursor) is an error.
   */
  readonly range?: { readonly fromSeq: number; readonly toSeq: number };
  /** Rebuild from a snapshot whatever the stored state (reason REINIT). */
  readonly reinit?: boolean;
}

/**
 * Runs one target transaction for one projection: initialize (snapshot and
 * cursor together), rebuild, or apply the next bounded batch with its
 * cursor. A before-image mismatch rolls everything back, then marks the
 * projection suspended in its own transaction.
 */
export async function step(ctx: StepContext, p: CompiledProjection): Promise<StepOutcome> {
  const { db, schema } = ctx;
  db.exec('BEGIN');
  let suspend: { reason: string; detail: Record<string, unknown> } | undefined;
  try {
    // Take the target's write lock before reading it, so the target is read at its latest state.
    try {
      cachedStatement(db, `UPDATE ${quoteIdent(schema)}.${TARGET_INFO_TABLE} SET id = id`).run();
    } catch (err) {
      markBusy(err, 'target');
      throw err;
    }
    const rec = readProjection(db, schema, p.name);
    const out = await stepInTransaction(ctx, p, rec);
    if (out.kind === 'suspended' && out.unchanged === true) {
      // Still suspended for the stored reason: its row (and updated_ms, when it was suspended) stays as it is.
      db.exec('ROLLBACK');
      return out;
    }
    if (out.kind === 'suspended') {
      suspend = out;
      throw new SuspendSignal();
    }
    if (out.kind === 'current') {
      db.exec('ROLLBACK');
      return out;
    }
    crashPoint('before-commit');
    db.exec('COMMIT');
    crashPoint('after-commit');
    return out;
  } catch (err) {
    // With the target's write lock held, a busy file is the source (a writer's lock on a rollback-journal source).
    markBusy(err, 'source');
    if (db.inTransaction) db.exec('ROLLBACK');
    dropTemps(db);
    if (err instanceof SuspendSignal && suspend !== undefined) {
      db.exec('BEGIN');
      // A projection suspended before its first build still gets its row, so
      // health and verify show it (and why) instead of not seeing it at all.
      if (readProjection(db, schema, p.name) === undefined) recordUnbuilt(db, ctx, p);
      setState(db, schema, p.name, 'suspended', suspend.reason, suspend.detail);
      db.exec('COMMIT');
      return { kind: 'suspended', ...suspend };
    }
    // Recorded by the caller that gives up on it (Syncer.runOnce), not here:
    // a busy target is retried, and an applier verdict (BATCH_GAP, ...) must
    // leave the target untouched.
    throw err;
  }
}

class SuspendSignal extends Error {}

function recordUnbuilt(db: Db, ctx: StepContext, p: CompiledProjection): void {
  insertProjection(db, ctx.schema, newProjectionRecord(p, readState(db)?.sourceId ?? '', ctx.sourcePath, 'suspended'));
}

async function stepInTransaction(ctx: StepContext, p: CompiledProjection, rec: ProjectionRecord | undefined): Promise<StepOutcome> {
  const { db, schema } = ctx;
  const view = readSourceView(db);
  const table = view.tables.get(p.source.table)?.table;
  if (rec === undefined) return initialize(ctx, p, view, table, undefined, []);
  if (ctx.reinit === true) return initialize(ctx, p, view, table, 'REINIT', ownedBy(rec));
  // Never built (suspended before its first snapshot): try the build again,
  // so fixing the cause (say, re-enabling in images mode) is enough.
  if (rec.state === 'suspended' && rec.cursor === null) return initialize(ctx, p, view, table, undefined, []);
  // A suspension whose cause is fixed by fixing it (the source's arming, a
  // user's UNIQUE index on the target; not diverged rows) is looked at again
  // each run: once the table is armed again, in images mode, the cursor check
  // below decides between continuing and rebuilding; once the index is gone,
  // the batch applies.
  if (rec.state === 'suspended' && !SELF_CLEARING_SUSPENSIONS.has(rec.reason ?? '')) return storedSuspension(rec);
  const owned = ownedBy(rec);
  if (rec.fingerprint !== p.fingerprint) return initialize(ctx, p, view, table, 'DEFINITION_CHANGED', owned);
  // After DDL sluice did not make, a projection verify can check proves its
  // continuity (below); any other rebuilds (SCHEMA_WINDOW).
  const provable = p.kind !== 'custom' && ctx.range === undefined;
  const v = validateCursor(db, rec.cursor ?? '', view, { allowSchemaWindow: provable });
  if (v.status === 'error') return { kind: 'suspended', reason: 'CURSOR_MALFORMED', detail: { message: v.message } };
  if (v.status === 'rebuild') {
    if (REBUILDABLE.has(v.reason)) return initialize(ctx, p, view, table, v.reason, owned);
    const why = v.detail?.reason;
    return {
      kind: 'suspended',
      reason: v.reason,
      detail: { table: p.source.table, ...(typeof why === 'string' ? { why } : {}), message: v.message },
    };
  }
  const t = v.tables[0] as CapturedTable;
  const lo = v.cursor.seq;
  // The proof compares the whole projection with the source at one seq: the
  // high-water mark read in this transaction, so the backlog is one batch.
  let hi = v.window === true ? v.view.hw : batchEnd(db, t.tid, lo, v.view.hw, ctx.batchSize);
  if (ctx.range !== undefined) {
    if (ctx.range.fromSeq > lo) {
      throw new FailClosedError(
        'BATCH_GAP',
        `Projection ${p.name} is at seq ${lo}, but the batch starts after seq ${ctx.range.fromSeq}: events ${lo + 1}..${ctx.range.fromSeq} would be skipped. Apply the missing batch first, or sync from the stored cursor.`,
        { projection: p.name, stored: lo, fromSeq: ctx.range.fromSeq },
      );
    }
    hi = Math.min(ctx.range.toSeq, v.view.hw);
  }
  if (hi <= lo && v.window !== true) return { kind: 'current', seq: lo, cursor: rec.cursor ?? '' };
  // A projection suspended by a user's UNIQUE index is tried again at once
  // when the index is gone, and while it is there at most once a minute
  // (each try may apply up to RETRY_SPAN + 1 batches and fail again; a
  // follower would otherwise do that at every source commit). An explicit
  // range is always tried.
  // (A clock set back makes the last try look older, not newer: tried now.)
  const sinceTried = Date.now() - rec.updatedMs;
  if (
    rec.state === 'suspended' &&
    rec.reason === 'TARGET_CONSTRAINT' &&
    ctx.range === undefined &&
    sinceTried >= 0 &&
    sinceTried < CONSTRAINT_RETRY_MS &&
    foreignUniqueIndexOf(db, schema, p) !== undefined
  ) {
    return storedSuspension(rec);
  }
  let r = await applyRange(ctx, p, t, lo, hi, ctx.range !== undefined ? 'range' : hi >= v.view.hw ? 'committed' : 'batch');
  // Intermediate batches need not reproduce source transactions: a batch
  // boundary may cut one, and in between a UNIQUE index a user added to the
  // target can be broken although no committed state of the source breaks
  // it. Such a batch is tried once more up to the high-water mark (a
  // committed state) before the projection is suspended, when that is
  // within RETRY_SPAN batches (a larger backlog is not made one batch).
  if (
    'kind' in r &&
    r.kind === 'suspended' &&
    r.reason === 'TARGET_CONSTRAINT' &&
    p.kind !== 'fts5' &&
    hi < v.view.hw &&
    ctx.range === undefined &&
    atMostEvents(db, t.tid, lo, v.view.hw, RETRY_SPAN * ctx.batchSize)
  ) {
    hi = v.view.hw;
    r = await applyRange(ctx, p, t, lo, hi, 'committed');
  }
  // Across a schema window, a backlog that does not apply (a user trigger
  // made and dropped around a write journals out of order) says the same
  // as a failed proof: the history is not whole. Rebuild, not suspend.
  if ('kind' in r && v.window === true && r.kind === 'suspended' && (r.reason === 'TARGET_DIVERGED' || r.reason === 'UNCAPTURED_REPLACE'))
    return initialize(ctx, p, view, table, 'SCHEMA_WINDOW', owned);
  if ('kind' in r) return r;
  // A copy that differs from its source after a schema window is rebuilt
  // (the batch applied above goes with its tables); one that matches goes on,
  // and its new cursor carries the current schema version.
  if (v.window === true && !matchesSourceAt(db, rec, hi, t.tid)) return initialize(ctx, p, view, table, 'SCHEMA_WINDOW', owned);
  const cursor = cursorToken(db, v.view, v.tables, hi);
  storeCursor(db, schema, p.name, cursor, hi, r.applied, r.lastTs);
  return { kind: 'applied', events: r.applied, seq: hi, cursor, caughtUp: hi >= v.view.hw };
}

/** How much a UNIQUE failure of a batch says: the range may cut a source transaction (`batch`, `range`), or it ends at a committed state. */
type RangeEnd = 'batch' | 'range' | 'committed';

/** A batch that breaks a user's UNIQUE index is tried up to the high-water mark when that is at most this many batches (of the projection's table) ahead. */
const RETRY_SPAN = 10;

/** While a user's UNIQUE index that suspended a projection is still there, it is tried again at most this often. */
const CONSTRAINT_RETRY_MS = 60_000;

function storedSuspension(rec: ProjectionRecord): StepOutcome {
  return {
    kind: 'suspended',
    reason: rec.reason ?? 'SUSPENDED',
    detail: rec.detail === null ? {} : (JSON.parse(rec.detail) as Record<string, unknown>),
    unchanged: true,
  };
}

/** Whether at most `limit` events of table `tid` are in (lo, hi]. */
function atMostEvents(db: Db, tid: number, lo: number, hi: number, limit: number): boolean {
  if (hi - lo <= limit) return true;
  return (
    Number(
      cachedStatement(
        db,
        `SELECT count(*) FROM (SELECT 1 FROM main.${JOURNAL_TABLE} WHERE tid = ? AND seq > ? AND seq <= ? LIMIT ?)`,
        'pluck',
      ).get(tid, lo, hi, limit + 1),
    ) <= limit
  );
}

/** Applies the events (lo, hi] of table t to projection p, in the caller's transaction (rows only, not the cursor). */
async function applyRange(
  ctx: StepContext,
  p: CompiledProjection,
  t: CapturedTable,
  lo: number,
  hi: number,
  end: RangeEnd,
): Promise<{ applied: number; lastTs: number | null } | StepOutcome> {
  const { db, schema } = ctx;
  let applied = 0;
  let lastTs: number | null = null;
  // A UNIQUE index a user added to an fts5 table: sluice updates the key
  // table in place, one row at a time, and FTS5 writes its own tables with
  // REPLACE, so such an index can refuse a batch midway or silently delete
  // rows. Refused before any write, when the batch has events for it.
  const ftsUnique = p.kind === 'fts5' ? foreignUniqueIndexOf(db, schema, p) : undefined;
  if (ftsUnique !== undefined && !atMostEvents(db, t.tid, lo, hi, 0)) {
    return {
      kind: 'suspended',
      reason: 'TARGET_CONSTRAINT',
      detail: { table: ftsUnique, source: p.source.table, message: ftsUniqueMessage(ftsUnique) },
    };
  }
  // With a UNIQUE index a user added to a mirror or map table, the batch's
  // writes may fail on it: a savepoint lets them be undone and tried again
  // (stepInTransaction), not the whole transaction.
  const guarded = (p.kind === 'mirror' || p.kind === 'map') && hasForeignUniqueIndex(db, schema, p.targetTable);
  if (guarded) db.exec('SAVEPOINT sluice_rows');
  try {
    const journal = journalRange(t.tid, p.source.columns.length, lo, hi);
    // Set-based where it can be: mirror and map always decide in SQL; fts5
    // does unless the batch is not clean, when the per-event path applies it
    // or finds the first mismatch.
    const setBased =
      p.kind === 'mirror' || p.kind === 'map'
        ? applyRelational(db, schema, p, journal, 'auto', guarded)
        : p.kind === 'fts5'
          ? applyFtsSetBased(db, schema, p, journal)
          : undefined;
    if (setBased !== undefined) {
      if (setBased.mismatch !== undefined) return divergence(p, setBased.mismatch);
      applied = setBased.transitions;
      const ts = cachedStatement(
        db,
        `SELECT ts FROM main.${JOURNAL_TABLE} WHERE tid = ? AND seq > ? AND seq <= ? ORDER BY seq DESC LIMIT 1`,
        'pluck',
      ).get(t.tid, lo, hi) as number | undefined;
      lastTs = ts === undefined ? null : julianToMs(ts);
    } else {
      // Event by event, in the batch's one transaction, read a page at a time
      // so that a large batch never sits in memory whole.
      for (let from = lo; from < hi;) {
        const to = batchEnd(db, t.tid, from, hi, EVENT_PAGE);
        const events = readEventsInRange(db, [t], from, to);
        lastTs = events.at(-1)?.ts ?? lastTs;
        if (p.kind === 'fts5') {
          const r = applyFtsEvents(db, schema, p, events);
          if (r.mismatch !== undefined) return divergence(p, r.mismatch);
          applied += r.applied;
        } else {
          applied += await applyCustomEvents(db, schema, p, events);
        }
        from = to;
      }
    }
  } catch (err) {
    // A UNIQUE index that a user added to a mirror or map table, which this
    // batch's rows break: undone. Suspended until the index goes (each run
    // tries again), unless a batch up to the high-water mark passes.
    if (guarded && (err as { code?: unknown }).code === 'SQLITE_CONSTRAINT_UNIQUE') {
      // (A conflict clause that ended the whole transaction took the savepoint with it.)
      if (db.inTransaction) {
        db.exec('ROLLBACK TO sluice_rows');
        db.exec('RELEASE sluice_rows');
      }
      const why =
        end === 'committed'
          ? `the source's rows, as committed, break it (the source allows duplicates there). Drop the index or make it non-unique, then sync (or remove the duplicates at the source, then sluice sync <source> <target> --reinit ${shellWord(p.name)}); while the index is there, sync tries again at most once a minute`
          : `this batch breaks it, where it ends (events ${lo + 1}..${hi}; a batch may end inside a source transaction${end === 'batch' ? ", and there were too many events ahead to try up to the source's last commit" : ''}). Drop the index or make it non-unique, then sync (or apply a range that ends at a commit of the source); while the index is there, sync tries again at most once a minute`;
      return {
        kind: 'suspended',
        reason: 'TARGET_CONSTRAINT',
        detail: {
          table: p.targetTable,
          source: p.source.table,
          fromSeq: lo,
          toSeq: hi,
          message: `${(err as Error).message}: the target table ${p.targetTable} has a UNIQUE index sluice did not make, and ${why}.`,
        },
      };
    }
    // A contentless index keeps no values, so nothing can check a
    // before-image against it: FTS5 itself refuses a delete of entries it
    // does not hold, as "corrupt". That is a diverged target, not a broken
    // database: suspend it with what to do.
    if (p.kind === 'fts5' && (err as { code?: unknown }).code === 'SQLITE_CORRUPT_VTAB') {
      return {
        kind: 'suspended',
        reason: 'TARGET_DIVERGED',
        detail: {
          table: p.targetTable,
          source: p.source.table,
          fromSeq: lo,
          toSeq: hi,
          message: `The FTS5 index ${p.targetTable} refused to remove entries of this batch: it was changed outside sluice, or a source write was not captured. Rebuild the projection: sluice sync <source> <target> --reinit ${shellWord(p.name)}.`,
        },
      };
    }
    throw err;
  }
  if (guarded) db.exec('RELEASE sluice_rows');
  return { applied, lastTs };
}

/** The fts5 fast path in the shape of applyRelational's result; `undefined` when the per-event path must decide. */
function applyFtsSetBased(
  db: Db,
  schema: string,
  p: CompiledProjection,
  journal: EventRelation,
): { transitions: number; mismatch?: undefined } | undefined {
  const r = applyFtsNet(db, schema, p, journal);
  return r === undefined ? undefined : { transitions: r.applied };
}

function divergence(p: CompiledProjection, m: { seq: number; key: readonly unknown[]; reason: string }): StepOutcome {
  return { kind: 'suspended', reason: m.reason, detail: { table: p.targetTable, source: p.source.table, key: m.key, seq: m.seq } };
}

/**
 * Target tables a stored projection made (so a rebuild may drop them). One
 * that was never built (no cursor: suspended before its first snapshot)
 * made none, whatever its target name says: a table of that name is the
 * user's.
 */
function ownedBy(rec: ProjectionRecord): string[] {
  return rec.cursor === null ? [] : ownedTables(rec.kind, rec.targetTable);
}

async function initialize(
  ctx: StepContext,
  p: CompiledProjection,
  view: SourceView,
  table: CapturedTable | undefined,
  reason: string | undefined,
  previouslyOwned: readonly string[],
): Promise<StepOutcome> {
  const { db, schema } = ctx;
  const a = view.tables.get(p.source.table);
  if (table === undefined || a === undefined) return { kind: 'suspended', reason: 'TABLE_UNTRACKED', detail: { table: p.source.table } };
  if (!a.armed) return { kind: 'suspended', reason: 'TABLE_UNARMED', detail: { table: p.source.table, why: a.reason } };
  if (table.mode !== 'images' && p.kind !== 'custom')
    return { kind: 'suspended', reason: 'NEEDS_IMAGES_MODE', detail: { table: p.source.table, mode: table.mode } };
  const s = quoteIdent(schema);
  const indexes = userIndexes(db, schema, previouslyOwned);
  for (const t of previouslyOwned) db.exec(`DROP TABLE IF EXISTS ${s}.${quoteIdent(t)}`);
  for (const t of p.ownedTables) {
    // Never overwrite a table sluice did not make: the user may keep other data in the target.
    if (db.prepare(`SELECT 1 FROM ${s}.sqlite_schema WHERE name = ? COLLATE NOCASE`).get(t) !== undefined) {
      throw new InvalidInputError(
        'TARGET_TABLE_EXISTS',
        `Projection ${p.name}: target table ${t} already exists in ${ctx.schema === 'main' ? 'the target' : 'the target database'} and sluice did not make it. Drop it, or set another "target" in the definition.`,
      );
    }
  }
  db.prepare(`DELETE FROM ${s}.${PROJECTIONS_TABLE} WHERE name = ?`).run(p.name);
  insertProjection(db, schema, newProjectionRecord(p, view.state.sourceId, ctx.sourcePath, 'building'));
  let rows: number;
  if (p.kind === 'mirror' || p.kind === 'map') {
    createRelationalTarget(db, schema, p);
    rows = snapshotRelational(db, schema, p);
  } else if (p.kind === 'fts5') {
    createFtsTarget(db, schema, p);
    rows = snapshotFts(db, schema, p);
  } else {
    rows = await initCustom(db, schema, p, rowsOf(db, table));
  }
  const dropped = restoreIndexes(db, schema, indexes);
  const cursor = cursorToken(db, view, [table], view.hw);
  storeCursor(db, schema, p.name, cursor, view.hw, 0, null);
  return {
    kind: 'initialized',
    rows,
    seq: view.hw,
    cursor,
    ...(reason === undefined ? {} : { reason }),
    ...(dropped.length === 0 ? {} : { droppedIndexes: dropped }),
  };
}

/**
 * Snapshot rows for a custom handler, exact, read in key-ordered pages so
 * that no statement stays open while the handler runs its own queries on the
 * same connection (and transaction).
 */
function* rowsOf(db: Db, t: CapturedTable): Generator<Row> {
  for (const values of pagedTable(db, t)) {
    const row: Record<string, SqlValue> = {};
    t.columns.forEach((c, i) => {
      row[c] = values[i] ?? null;
    });
    yield row;
  }
}
