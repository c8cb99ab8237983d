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
  db.pragma('cache_size = -16384');
  db.pragma(`${quoteIdent(targetSchema)}.cache_size = -32768`);
  if (options.checkpoint) db.pragma('wal_autocheckpoint = 10000');
}
