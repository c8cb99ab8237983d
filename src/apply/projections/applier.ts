import { createHash } from 'node:crypto';
import type { Db } from '../../sqlite/index.ts';
import {
  canHoldNegativeZero,
  declaredType,
  foldIdent,
  quoteIdent,
  writeTransaction,
  reinitCommand,
  scrubbing,
} from '../../sqlite/index.ts';
import { FailClosedError, InvalidInputError, errorCode } from '../../errors.ts';
import type { ReasonCode } from '../../reasons.ts';
import type { ChangeBatch } from '../../feed/index.ts';
import {
  madeTablesAt,
  ownedTablesAt,
  type CompiledProjection,
  dropTemps,
  kindOf,
  foreignUniqueIndexOf,
  ftsUniqueMessage,
  losesColumn,
  ExpressionRaised,
  type RaisingImage,
} from '../../projection/index.ts';
import type { SnapshotBuild, SnapshotRows } from '../../projection/index.ts';
import {
  SELF_CLEARING_SUSPENSIONS,
  insertProjection,
  newProjectionRecord,
  ownedTables,
  readProjection,
  setState,
  storeCursor,
  PROJECTIONS_TABLE,
  type ProjectionRecord,
  restoreIndexes,
  restoreTriggers,
  userIndexes,
  userTriggers,
  type DroppedIndex,
  type DroppedTrigger,
  type UserIndex,
} from '../target/index.ts';

/*
 * The one place where a snapshot or a batch meets a projection kind. sync
 * (step.ts) feeds it batches read from the journal and snapshots read from
 * the source; import (export/import.ts) feeds it batches and snapshots read
 * from lines. Both get the same cursor rules, the same suspensions, the
 * same rules for a UNIQUE index a user added, and the same shadow build of
 * a snapshot. The caller owns the transaction (sqlite/transaction.ts):
 * everything here writes in it, and a suspension is returned, for the
 * caller to roll back and then record with recordSuspension.
 */

/** Where the applier writes: the target's schema on the connection, and what its rows record of the source. */
export interface ApplyTarget {
  readonly db: Db;
  readonly schema: string;
  readonly sourceId: string;
  /** The source's path as stored with new projections (null when only its stream is known: import). */
  readonly sourcePath: string | null;
}

export interface Suspension {
  readonly kind: 'suspended';
  readonly reason: ReasonCode;
  readonly detail: Record<string, unknown>;
  /** The stored suspension, as it is: nothing to write. */
  readonly unchanged?: true;
}

export function suspension(reason: ReasonCode, detail: Record<string, unknown>): Suspension {
  return { kind: 'suspended', reason, detail };
}

/** A projection's stored suspension, as a result that writes nothing. */
export function storedSuspension(rec: ProjectionRecord): Suspension {
  return {
    kind: 'suspended',
    reason: rec.reason ?? 'SUSPENDED',
    detail: rec.detail ?? {},
    unchanged: true,
  };
}

/** While a user's UNIQUE index that suspended a projection is still there, it is tried again at most this often. */
const CONSTRAINT_RETRY_MS = 60_000;

/**
 * Whether a stored projection takes batches now, or its stored suspension
 * stands. A suspension whose cause is fixed by fixing it (catalog `clears`:
 * the source's arming, a user's UNIQUE index on the target; not diverged
 * rows) is looked at again each time. One caused by a user's UNIQUE index
 * is tried again at once when the index is gone, and while it is there at
 * most once a minute (each try may apply batches and fail again; a follower
 * would otherwise do that at every source commit), unless the batch is one
 * the caller asked for (`explicit`). A clock set back makes the last try
 * look older, not newer: tried now.
 */
export function suspensionGate(t: ApplyTarget, p: CompiledProjection, rec: ProjectionRecord, explicit: boolean): Suspension | undefined {
  if (rec.state !== 'suspended') return undefined;
  if (!SELF_CLEARING_SUSPENSIONS.has(rec.reason ?? '')) return storedSuspension(rec);
  if (rec.reason !== 'TARGET_CONSTRAINT' || explicit) return undefined;
  const sinceTried = Date.now() - rec.updatedMs;
  if (
    sinceTried >= 0 &&
    sinceTried < CONSTRAINT_RETRY_MS &&
    foreignUniqueIndexOf(t.db, t.schema, kindOf(p).uniqueTables(p.targetTable)) !== undefined
  )
    return storedSuspension(rec);
  return undefined;
}

/**
 * The cursor rule for a batch (fromSeq, toSeq] against a projection at
 * `storedSeq`: already applied is `undefined` (nothing to do), an overlap
 * applies only the part after the stored seq, and a gap (the batch starts
 * after it) is BATCH_GAP, before anything is written, ending with `fix`
 * (the caller's repair: another file, for import).
 */
export function positionBatch(
  p: CompiledProjection,
  storedSeq: number,
  batch: ChangeBatch,
  what: string,
  fix = 'Apply the batch that holds them first, or sync from the stored cursor.',
): ChangeBatch | undefined {
  if (batch.toSeq <= storedSeq) return undefined;
  if (batch.fromSeq > storedSeq) {
    throw new FailClosedError(
      'BATCH_GAP',
      `Projection ${p.name} is at seq ${storedSeq}, but ${what} starts after seq ${batch.fromSeq}: events ${storedSeq + 1}..${batch.fromSeq} would be skipped. ${fix}`,
      { projection: p.name, stored: storedSeq, fromSeq: batch.fromSeq },
    );
  }
  return batch.after(storedSeq);
}

/**
 * Whether an update none of whose changed columns a projection reads is
 * marked for its kind to check and not write (on). Off only to measure what
 * it saves (bench/apply.ts): the rows come out the same either way.
 */
export const skipUnread = { on: true };

/**
 * `batch` as `p`'s kind takes it: when `p` reads only some of the source's
 * columns (`p.reads`: what SQLite compiles its SQL to read, or what a
 * custom definition declares), an update whose changed columns are all
 * outside them is marked (feed/change-batch.ts `readingOnly`): the kind
 * checks its before-image against the target like any event's and writes
 * nothing for it (a custom handler, whose state sluice cannot check, is not
 * called). Inserts, deletes, updates of unknown columns and key changes
 * (the key is read) are never marked. The range stays: the cursor moves to
 * the batch's end.
 */
function readBy(p: CompiledProjection, batch: ChangeBatch): ChangeBatch {
  if (p.reads === undefined || !skipUnread.on) return batch;
  // A column without affinity can hold -0.0, which the mask does not tell from 0.0: an update with a real zero there is written.
  const read = new Set(p.reads.map(foldIdent));
  const signedZero = p.source.columns.filter((c) => read.has(foldIdent(c.name)) && canHoldNegativeZero(declaredType(c))).map((c) => c.name);
  return batch.readingOnly(p.reads, signedZero);
}

/**
 * A batch that failed in SQLite because one of the map's expressions or its
 * filter raised on an image (json() of text that is not JSON): a
 * suspension naming the column, the key and the seq, whose repair (fix the
 * value or the expression, then reinit) works; a plain sync would only meet
 * the journal's value again. Undefined for any other failure.
 */
function expressionFailure(t: ApplyTarget, p: CompiledProjection, batch: ChangeBatch, err: unknown): Suspension | undefined {
  if (!(err instanceof ExpressionRaised)) return undefined;
  const r: RaisingImage = err.image;
  return suspension('EXPRESSION_FAILED', {
    table: p.targetTable,
    source: p.source.table,
    expression: r.what,
    key: r.key,
    seq: r.seq,
    message: `projection ${p.name}: ${r.what} ${r.expr} raised "${r.message}" on the image of key ${JSON.stringify(r.key)} of ${p.source.table} at seq ${r.seq} (batch seq ${batch.fromSeq} to ${batch.toSeq}); nothing of the batch was kept, and a plain sync meets that value in the journal again. Fix the value in ${p.source.table} or make the expression total, then rebuild: ${reinitCommand(p.name, t.sourcePath, targetFile(t))}.`,
  });
}

/** How much a UNIQUE failure of a batch says: the batch may cut a source transaction (`batch`, `range`), or it ends at a committed state. */
export type BatchEnd = 'batch' | 'range' | 'committed';

export interface RowsApplied {
  readonly kind: 'rows';
  readonly applied: number;
  readonly lastTs: number | null;
}

/**
 * Applies a batch's rows to a projection in the caller's transaction (the
 * cursor is the caller's: commitBatch). A before-image that does not match,
 * or a user's UNIQUE index the batch breaks, is a suspension: the caller
 * rolls back.
 */
export async function applyRows(
  t: ApplyTarget,
  p: CompiledProjection,
  batch: ChangeBatch,
  end: BatchEnd,
): Promise<RowsApplied | Suspension> {
  const { db, schema } = t;
  const kind = kindOf(p);
  if (kind.needsImages && batch.keysOnly() && !batch.atMost(0))
    return suspension('NEEDS_IMAGES_MODE', {
      table: p.source.table,
      message: `table ${p.source.table} has events without images (keys mode)`,
    });
  const foreign = foreignUniqueIndexOf(db, schema, kind.uniqueTables(p.targetTable));
  // Tables sluice updates in place or FTS5 writes with REPLACE: such an index could refuse a batch midway or silently delete rows.
  if (foreign !== undefined && kind.foreignUnique === 'refuse' && !batch.atMost(0))
    return suspension('TARGET_CONSTRAINT', { table: foreign, source: p.source.table, message: ftsUniqueMessage(foreign) });
  const guarded = foreign !== undefined;
  const apply = async (): Promise<RowsApplied | Suspension> => {
    const r = await kind.apply(db, schema, p, readBy(p, batch), guarded);
    if (r.mismatch !== undefined) {
      const m = r.mismatch;
      return suspension(m.reason, { table: p.targetTable, source: p.source.table, key: m.key, seq: m.seq });
    }
    if (r.refused !== undefined)
      return suspension(r.refused.reason, {
        table: p.targetTable,
        source: p.source.table,
        fromSeq: batch.fromSeq,
        toSeq: batch.toSeq,
        message: `${r.refused.message} Rebuild the projection: ${reinitCommand(p.name, t.sourcePath, targetFile(t))}.`,
      });
    return { kind: 'rows', applied: r.applied, lastTs: batch.lastTs() };
  };
  try {
    // Otherwise the batch's writes may fail on it: a savepoint (the caller's transaction is open) lets them be undone and tried again, not the whole transaction.
    return guarded ? await writeTransaction(db, apply) : await apply();
  } catch (err) {
    const raised = expressionFailure(t, p, batch, err);
    if (raised !== undefined) return raised;
    if (!guarded || errorCode(err) !== 'SQLITE_CONSTRAINT_UNIQUE') throw err;
    // (Rolled back to the savepoint; a conflict clause that ended the whole transaction took the savepoint with it.)
    return suspension('TARGET_CONSTRAINT', {
      table: p.targetTable,
      source: p.source.table,
      fromSeq: batch.fromSeq,
      toSeq: batch.toSeq,
      message: `${(err as Error).message}: the target table ${p.targetTable} has a UNIQUE index sluice did not make, and ${constraintWhy(t, p, batch, end)}.`,
    });
  }
}

function constraintWhy(t: ApplyTarget, p: CompiledProjection, batch: ChangeBatch, end: BatchEnd): string {
  if (end === 'committed')
    return `the source's rows, as committed, break it (the source allows duplicates there). Drop the index or make it non-unique, then sync (or remove the duplicates at the source, then ${reinitCommand(p.name, t.sourcePath, targetFile(t))}); while the index is there, sync tries again at most once a minute`;
  return `this batch breaks it, where it ends (events ${batch.fromSeq + 1}..${batch.toSeq}; a batch may end inside a source transaction${end === 'batch' ? ", and there were too many events ahead to try up to the source's last commit" : ''}). Drop the index or make it non-unique, then sync or import again (or apply a range that ends at a commit of the source); while the index is there, sync tries again at most once a minute`;
}

/** Stores the cursor a batch ends at, with its rows (in the caller's transaction). */
export function commitBatch(t: ApplyTarget, p: CompiledProjection, cursor: string, seq: number, rows: RowsApplied): void {
  storeCursor(t.db, t.schema, p.name, cursor, seq, rows.applied, rows.lastTs);
}

/**
 * A snapshot being installed as a projection: built into shadow tables,
 * then swapped in (old tables dropped, shadow renamed, the user's indexes
 * and triggers made again, the cursor stored), all in the caller's transaction. Readers
 * see the old projection until the commit, and the new one after it.
 */
export class SnapshotInstall {
  readonly p: CompiledProjection;
  readonly #t: ApplyTarget;
  readonly #build: SnapshotBuild;
  readonly #shadow: string;
  readonly #previous: readonly string[];
  readonly #indexes: UserIndex[];
  /** The tables it replaces may hold a column the new source shape lacks (losesColumn: one left out of capture since): dropped scrubbed (sqlite/scrub.ts). */
  readonly #scrub: boolean;
  /** The projection's row as it was before begin replaced it (undefined: it had none), for abort. */
  readonly #row: Record<string, unknown> | undefined;

  private constructor(
    t: ApplyTarget,
    p: CompiledProjection,
    previous: readonly string[],
    indexes: UserIndex[],
    shadow: string,
    build: SnapshotBuild,
    scrub: boolean,
    row: Record<string, unknown> | undefined,
  ) {
    this.#t = t;
    this.#scrub = scrub;
    this.#row = row;
    this.p = p;
    this.#previous = previous;
    this.#indexes = indexes;
    this.#shadow = shadow;
    this.#build = build;
  }

  /**
   * Starts installing `p` over its stored row `rec` (undefined: none). Its
   * target tables must be free, or its own; TARGET_TABLE_EXISTS otherwise,
   * before anything is written.
   */
  static begin(t: ApplyTarget, p: CompiledProjection, rec: ProjectionRecord | undefined): SnapshotInstall {
    const { db, schema } = t;
    const s = quoteIdent(schema);
    const kind = kindOf(p);
    const previous = replacedTables(rec, p);
    checkTablesFree(t, p, previous);
    const indexes = userIndexes(db, schema, previous);
    const row = db.prepare(`SELECT * FROM ${s}.${PROJECTIONS_TABLE} WHERE name = ?`).get(p.name) as Record<string, unknown> | undefined;
    db.prepare(`DELETE FROM ${s}.${PROJECTIONS_TABLE} WHERE name = ?`).run(p.name);
    insertProjection(db, schema, newProjectionRecord(p, t.sourceId, t.sourcePath, 'building'));
    const shadow = shadowName(p);
    for (const x of ownedTablesAt(p, shadow)) db.exec(`DROP TABLE IF EXISTS ${s}.${quoteIdent(x)}`);
    kind.create(db, schema, p, shadow);
    const scrub = rec !== undefined && losesColumn(rec.sourceShape, p.source);
    return new SnapshotInstall(t, p, previous, indexes, shadow, kind.build(db, schema, p, shadow), scrub, row);
  }

  /**
   * Undoes what begin did, once the caller has rolled back what finish wrote
   * (finish run in a savepoint that failed): the tables built at the shadow
   * name are dropped, and the projection's row is as it was before begin
   * (none, for a first build). The tables it would have replaced were never
   * touched. The caller's transaction then goes on with the other
   * projections of the snapshot.
   */
  abort(): void {
    const { db, schema } = this.#t;
    const s = quoteIdent(schema);
    for (const x of ownedTablesAt(this.p, this.#shadow)) db.exec(`DROP TABLE IF EXISTS ${s}.${quoteIdent(x)}`);
    db.prepare(`DELETE FROM ${s}.${PROJECTIONS_TABLE} WHERE name = ?`).run(this.p.name);
    const row = this.#row;
    if (row === undefined) return;
    const columns = Object.keys(row);
    db.prepare(
      `INSERT INTO ${s}.${PROJECTIONS_TABLE} (${columns.map(quoteIdent).join(', ')}) VALUES (${columns.map(() => '?').join(', ')})`,
    ).run(...columns.map((c) => row[c]));
  }

  add(rows: SnapshotRows): Promise<void> {
    return this.#build.add(rows);
  }

  /** The table its main table is built under until the swap (a constraint it breaks names this table). */
  get buildTable(): string {
    return this.#shadow;
  }

  /** Swaps the shadow in and stores the cursor the snapshot was read at. */
  async finish(
    cursor: string,
    seq: number,
  ): Promise<{
    readonly rows: number;
    readonly droppedIndexes: readonly DroppedIndex[];
    readonly droppedTriggers: readonly DroppedTrigger[];
  }> {
    const { db, schema } = this.#t;
    const rows = await this.#build.finish();
    // The user's triggers on the tables it replaces, which go with them: none is on the shadow, so the snapshot fired none.
    const triggers = userTriggers(db, schema, this.#previous);
    const drop = () => {
      for (const x of this.#previous) db.exec(`DROP TABLE IF EXISTS ${quoteIdent(schema)}.${quoteIdent(x)}`);
    };
    if (this.#scrub) scrubbing(db, schema, drop);
    else drop();
    kindOf(this.p).rename(db, schema, this.p, this.#shadow);
    // The indexes a user added to the tables it replaced, made again (see user-indexes.ts).
    const droppedIndexes = restoreIndexes(db, schema, this.#indexes);
    const droppedTriggers = restoreTriggers(db, schema, triggers);
    storeCursor(db, schema, this.p.name, cursor, seq, 0, null);
    return { rows, droppedIndexes, droppedTriggers };
  }
}

/** Never overwrite a table sluice did not make: the user may keep other data in the target. TARGET_TABLE_EXISTS, before anything is written. */
export function checkTablesFree(t: Pick<ApplyTarget, 'db' | 'schema'>, p: CompiledProjection, previous: readonly string[]): void {
  const taken = takenTable(t, p, previous);
  if (taken !== undefined) throw taken.error;
}

/**
 * The first table a build of `p` makes (its own, and those SQLite makes
 * beside them: an FTS5 table's `_data`, ...) that is in the target and is
 * not one of `previous` (the tables a build of it replaces) or made beside
 * one of them, with the error that refuses the build; explain and plan
 * report it as their prediction (explain-facts.ts, pipeline/plan.ts).
 */
export function takenTable(
  t: Pick<ApplyTarget, 'db' | 'schema'>,
  p: CompiledProjection,
  previous: readonly string[],
): { readonly table: string; readonly error: InvalidInputError } | undefined {
  const { db, schema } = t;
  const same = (a: string) => (b: string) => foldIdent(a) === foldIdent(b);
  for (const name of madeTablesAt(p)) {
    const own = previous.some(same(name)) || madeBeside(t, p, previous, name);
    if (!own && db.prepare(`SELECT 1 FROM ${quoteIdent(schema)}.sqlite_schema WHERE name = ? COLLATE NOCASE`).get(name) !== undefined) {
      const error = new InvalidInputError(
        'TARGET_TABLE_EXISTS',
        `Projection ${p.name}: target table ${name} already exists in ${schema === 'main' ? 'the target' : 'the target database'} and sluice did not make it. Drop it, or set another "target" in the definition.`,
      );
      return { table: name, error };
    }
  }
  return undefined;
}

/** Whether `name` is a table SQLite made beside one of `previous` (an FTS5 table's `_data`, ...: SQLite calls it a shadow table). */
function madeBeside(t: Pick<ApplyTarget, 'db' | 'schema'>, p: CompiledProjection, previous: readonly string[], name: string): boolean {
  const beside = previous.some((x) => (kindOf(p).sqliteTables?.(x) ?? []).some((y) => foldIdent(y) === foldIdent(name)));
  return (
    beside &&
    t.db.prepare("SELECT 1 FROM pragma_table_list WHERE schema = ? AND name = ? COLLATE NOCASE AND type = 'shadow'").get(t.schema, name) !==
      undefined
  );
}

/** The name a projection's main table is built under before the swap. */
function shadowName(p: CompiledProjection): string {
  return `_sluice_shadow_${createHash('sha256').update(p.name).digest('hex').slice(0, 12)}`;
}

/**
 * Target tables a stored projection made (so a rebuild may drop them). One
 * that was never built (no cursor: suspended before its first snapshot)
 * made none, whatever its target name says: a table of that name is the
 * user's.
 */
export function ownedBy(rec: ProjectionRecord): string[] {
  return rec.cursor === null ? [] : ownedTables(rec);
}

/**
 * The tables a rebuild of `p` over its stored row `rec` replaces: those
 * `rec` owns; and when it owned none although built (a custom handler that
 * made its tables itself, before its definition declared them), those `p`
 * declares now: the definition says they are the projection's.
 */
export function replacedTables(rec: ProjectionRecord | undefined, p: CompiledProjection): string[] {
  if (rec === undefined) return [];
  const owned = ownedBy(rec);
  return owned.length > 0 || rec.cursor === null || rec.kind !== p.kind ? owned : [...p.ownedTables];
}

/**
 * Records a suspension in its own transaction, after the caller rolled back
 * the one that found it. A projection suspended before its first build
 * still gets its row, so health and verify show it (and why).
 */
export async function recordSuspension(t: ApplyTarget, p: CompiledProjection, s: Suspension): Promise<void> {
  const { db, schema } = t;
  dropTemps(db);
  if (s.unchanged === true) return;
  await writeTransaction(db, () => {
    if (readProjection(db, schema, p.name) === undefined)
      insertProjection(db, schema, newProjectionRecord(p, t.sourceId, t.sourcePath, 'suspended'));
    setState(db, schema, p.name, 'suspended', s.reason, s.detail);
  });
}

/** The file of the target's schema on the connection, as SQLite opened it. */
export function targetFile(t: Pick<ApplyTarget, 'db' | 'schema'>): string {
  const rows = t.db.prepare('PRAGMA database_list').all() as { name: string; file: string }[];
  return rows.find((r) => r.name === t.schema)?.file ?? '';
}
