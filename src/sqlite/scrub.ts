import type { Db } from './db.ts';
import { connectionState, slot } from './connection-state.ts';
import { quoteIdent } from './quote.ts';

/*
 * Dropping what must not survive in a database file: the tables (and
 * indexes) of a target that hold a column since left out of capture
 * (docs/journal.md, "Columns left out of capture"). A plain drop only
 * puts their pages on the freelist, bytes and all, and the `-wal` keeps
 * older images of them until it is started again. So such a drop runs
 * with `secure_delete` on for its schema (SQLite zeroes every page it
 * frees, and the freed space in the pages it writes), and the commit that
 * follows is followed by a `wal_checkpoint(TRUNCATE)` of that schema
 * (best effort, as the source side's purge, and without waiting: a reader
 * holding an older snapshot keeps the frames until a later checkpoint or
 * the last connection's close), which copies the zeroed pages over the
 * file's older ones and empties the `-wal`.
 * Only such drops pay: every other write leaves secure_delete as it was.
 */

/** The schemas of a connection's open transaction where scrubbed drops ran (checkpointed after its commit). */
const scrubbed = slot('scrubbed-schemas', (): Set<string> => new Set());

/** Runs `fn` (the drops) with secure_delete on for `schema`, then as it was; the transaction's commit checkpoints the schema. */
export function scrubbing<T>(db: Db, schema: string, fn: () => T): T {
  const s = quoteIdent(schema);
  const before = Number(db.pragma(`${s}.secure_delete`, { simple: true }));
  db.pragma(`${s}.secure_delete = ON`);
  connectionState(db).get(scrubbed).add(schema);
  try {
    return fn();
  } finally {
    db.pragma(`${s}.secure_delete = ${before}`);
  }
}

/**
 * The schemas whose scrubbed drops committed but whose TRUNCATE checkpoint
 * did not complete (a reader held the log): the zeroed pages are in the
 * `-wal` only, and the file keeps the old ones until a checkpoint copies
 * them over. A follower's own watch of the target is such a reader: it
 * lets go and the checkpoint is tried again (scrubCheckpointOwed).
 */
const owed = slot('scrub-checkpoint-owed', (): Set<string> => new Set());

/** After a top-level COMMIT (transaction.ts): each schema scrubbed in it, and each still owed one, checkpointed with TRUNCATE, best effort. */
export function checkpointScrubbed(db: Db): void {
  const state = connectionState(db);
  const schemas = state.peek(scrubbed);
  const due = state.peek(owed);
  if ((schemas === undefined || schemas.size === 0) && (due === undefined || due.size === 0)) return;
  const still = state.get(owed);
  for (const schema of schemas ?? []) still.add(schema);
  schemas?.clear();
  // Without waiting: a reader holding an older snapshot (a follower's own watch of the target pins one) would hold the
  // writer for the whole busy timeout. What it keeps stays owed: the next commit, a follower's watch letting go
  // (scrubCheckpointOwed), or the last connection's close copies it over.
  const timeout = Number(db.pragma('busy_timeout', { simple: true }));
  db.pragma('busy_timeout = 0');
  try {
    for (const schema of [...still])
      try {
        const r = db.pragma(`${quoteIdent(schema)}.wal_checkpoint(TRUNCATE)`) as { busy: number; log: number; checkpointed: number }[];
        // busy: it could not finish; log -1 (no log: not WAL) and 0 (emptied) are done.
        if (r[0]?.busy === 0) still.delete(schema);
      } catch (err) {
        // (Best effort, as above: it stays owed, unless the schema is no longer attached.)
        if (/unknown database/i.test(String((err as Error).message))) still.delete(schema);
      }
  } finally {
    db.pragma(`busy_timeout = ${timeout}`);
  }
}

/** Whether a scrubbed drop's checkpoint is owed on `db` (checkpointScrubbed could not finish it): try again once the reader let go. */
export function scrubCheckpointOwed(db: Db): boolean {
  return (connectionState(db).peek(owed)?.size ?? 0) > 0;
}

/** After a top-level ROLLBACK (transaction.ts): nothing was dropped. */
export function forgetScrubbed(db: Db): void {
  connectionState(db).peek(scrubbed)?.clear();
}
