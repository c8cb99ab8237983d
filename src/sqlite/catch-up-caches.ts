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
export function useCatchUpCaches(db: Db, targetSchema: string, options: { readonly checkpoint: boolean }): void {
  catchUpCacheSizes(db, targetSchema, true);
  if (options.checkpoint) db.pragma('wal_autocheckpoint = 10000');
}

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
