import type { Db } from '../sqlite/index.ts';
import { writeAlone } from '../sqlite/index.ts';
import { clearFailure, hasTargetMeta, readProjection, readProjections, recordFailure, type FedBy } from '../apply/target/index.ts';
import { failureOf } from '../apply/sync/index.ts';
import { FailClosedError, SluiceError } from '../errors.ts';

/*
 * A file `sluice import` refused (its events start past the target's cursor,
 * it does not continue the target's history, it is of another source, a
 * changed definition without a snapshot, a line that is not sluice's...):
 * the import stops, and the target keeps the rows it had. A cron job that
 * does not look at import's exit code would have a stale target that health
 * called fine. So the refusal is recorded as sync records a failed pass
 * (last_error, last_error_code, last_error_ms, failures: target-meta.ts) on
 * each projection the import concerns, in a transaction of its own after the
 * refused one rolled back; no row of a projection, no cursor and no state
 * is changed. health reports it with a repair for an imported target
 * (apply/check/failed-attempts.ts), and the next import that succeeds clears it
 * (clearRefusals).
 *
 * A subscriber's run that stops fail-closed (exit 3: its stream does not
 * continue the target's history, HISTORY_DIVERGED, ...) is recorded the
 * same way, so that health exits 3 after a follower stopped, until a
 * subscribe run moves the projection on (a rebuild from the stream's
 * snapshot, or a batch applied: storing a cursor clears the record, also
 * in a follower, which does not end). Its other errors (the broker gone, a consumer made again) are
 * not the target's to record.
 */

/** The codes of refusals that are not this target's to record: it is a source, not a target. */
const NOT_RECORDED: ReadonlySet<string> = new Set(['TARGET_IS_SOURCE']);

/**
 * Records `err`, the error that stopped the import of a file (fedBy.file,
 * its absolute path: the message may name it as it was typed, relative to
 * another directory), or a subscriber's run from a stream when it stopped
 * fail-closed, on projections `names` (every projection of the target when
 * not known): each that has a row and is not suspended (a suspension is
 * what health reports of it, with its own repair). Best effort, as sync's:
 * a target that cannot take the record (busy, full, damaged), or is in a
 * transaction still, keeps what it had.
 */
export function recordRefusal(db: Db, schema: string, err: unknown, fedBy: FedBy, names: readonly string[] | undefined): void {
  if (err instanceof SluiceError && NOT_RECORDED.has(err.code)) return;
  if (fedBy.via === 'subscribe' && !(err instanceof FailClosedError)) return;
  if (db.inTransaction) return;
  const failure = failureOf(err);
  const run = fedBy.via === 'import' ? `the import of ${fedBy.file}` : `the subscribe run from stream ${fedBy.stream} at ${fedBy.url}`;
  const message = `${run} stopped: ${failure.message}`;
  // (writeAlone: sync's best effort, a transaction of its own, rolled back on any error.)
  writeAlone(db, () => {
    if (!hasTargetMeta(db, schema)) return;
    for (const name of names ?? readProjections(db, schema).map((r) => r.name)) {
      const rec = readProjection(db, schema, name);
      if (rec === undefined || rec.state === 'suspended') continue;
      recordFailure(db, schema, name, failure.code, message);
    }
  });
}

/**
 * The refusals that say the target lacks events a file carried (its events
 * start past the target's cursor): an import that adds nothing (an older
 * file imported again, every batch of it applied) does not fill that gap,
 * so only one that moved the projection on clears it. Any other refusal (a
 * file of another source, a definition changed with no snapshot) said the
 * file was wrong, and the next import that succeeds clears it.
 */
const LACKING: ReadonlySet<string> = new Set(['BATCH_GAP']);

/**
 * Clears the recorded failures of projections `names` after an import that
 * succeeded for them, in the caller's transaction; `movedOn`: those whose
 * seq or cursor it changed.
 */
export function clearRefusals(db: Db, schema: string, names: Iterable<string>, movedOn: ReadonlySet<string>): void {
  for (const name of names) {
    const r = readProjection(db, schema, name);
    if (r === undefined || r.failures === 0) continue;
    if (r.lastErrorCode !== null && LACKING.has(r.lastErrorCode) && !movedOn.has(name)) continue;
    clearFailure(db, schema, name);
  }
}
