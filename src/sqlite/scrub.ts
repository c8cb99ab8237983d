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

/** After a top-level COMMIT (transaction.ts): each schema scrubbed in it checkpointed with TRUNCATE, best effort. */
export function checkpointScrubbed(db: Db): void {
  const schemas = connectionState(db).peek(scrubbed);
  if (schemas === undefined || schemas.size === 0) return;
  // Without waiting: a reader holding an older snapshot (a follower's own watch of the target pins one) would hold the
  // writer for the whole busy timeout. What it keeps, the next checkpoint (or the last connection's close) copies over.
  const timeout = Number(db.pragma('busy_timeout', { simple: true }));
  db.pragma('busy_timeout = 0');
  try {
    for (const schema of schemas)
      try {
        db.pragma(`${quoteIdent(schema)}.wal_checkpoint(TRUNCATE)`);
      } catch {
        // (Best effort, as above.)
      }
  } finally {
    db.pragma(`busy_timeout = ${timeout}`);
    schemas.clear();
  }
}

/** After a top-level ROLLBACK (transaction.ts): nothing was dropped. */
export function forgetScrubbed(db: Db): void {
  connectionState(db).peek(scrubbed)?.clear();
}
