import type { Db } from './connection.ts';
import { quoteIdent } from './quote.ts';

/*
 * Caches for a connection that applies large batches to a target (sync's
 * session, import). A batch of random keys touches most pages of a target
 * table, and the set-based apply reads the batch's rows several times:
 * caches larger than the 2 MB default keep both in memory across a batch's
 * statements (an upper bound, allocated only as used). A commit of such a
 * batch writes thousands of pages, past the 1000-page autocheckpoint, so
 * each one also ran a checkpoint (copy and fsync of the whole batch again);
 * checkpointing every ~40 MB of WAL instead writes a page rewritten by
 * several batches once (the setting is per connection). Durability is
 * unchanged (same synchronous level). Import (bench/import.ts) spent a
 * quarter of its CPU time in those checkpoints before it used this too.
 */
export function useCatchUpCaches(
  db: Db,
  targetSchema: string,
  options: { readonly checkpoint: boolean; readonly checkpointPages?: number },
): void {
  catchUpCacheSizes(db, targetSchema, true);
  if (options.checkpoint) db.pragma(`wal_autocheckpoint = ${options.checkpointPages ?? CATCH_UP_CHECKPOINT_PAGES}`);
}

/** WAL pages between checkpoints of a catch-up (about 40 MB of 4 KiB pages). */
export const CATCH_UP_CHECKPOINT_PAGES = 10_000;

/**
 * The same for an import of a file (or segment) at hand: about 160 MB. Each
 * checkpoint copies the pages written since the last one into the database
 * and syncs it, inside the COMMIT that crossed the bound; a page rewritten
 * by several batches is copied once per checkpoint, and a sync's target,
 * whose log its watch of hand edits keeps pinned, reached 178 MB in the same
 * catch-up (bench/import.ts: 1M events). In interleaved rounds of the bench's
 * segment import, 40,000 pages took 2-6% less wall time than 10,000. A
 * subscriber keeps 10,000: each checkpoint is a pause of the batch that
 * crosses the bound, and a live stream's latency is what it is judged by.
 */
export const IMPORT_CHECKPOINT_PAGES = 40_000;

/** The page caches of a catch-up (KiB, as a negative cache_size says): the source's (main) and the target's. */
export const CATCH_UP_CACHE_KIB = { source: 16384, target: 32768 } as const;

/** SQLite's default page cache (KiB): what a follower's small batches keep. */
export const FOLLOW_CACHE_KIB = 2000;

/**
 * The caches of a catch-up (`on`), or SQLite's default once the connection
 * follows small batches: a follower's batch of a few rows reads a few pages
 * of each database, and the source's cache is emptied by every commit of
 * another program anyway (SQLite drops a WAL reader's cache when the
 * database changed), so large caches only hold the pages of the last
 * catch-up. A cache made smaller frees its pages beyond the new size at
 * once (SQLite's pcache), so a process that follows many targets (sluice
 * run: a worker thread per target) does not keep 48 MB per target after
 * building them. Call between transactions.
 */
export function catchUpCacheSizes(db: Db, targetSchema: string, on: boolean): void {
  db.pragma(`main.cache_size = -${on ? CATCH_UP_CACHE_KIB.source : FOLLOW_CACHE_KIB}`);
  db.pragma(`${quoteIdent(targetSchema)}.cache_size = -${on ? CATCH_UP_CACHE_KIB.target : FOLLOW_CACHE_KIB}`);
}
