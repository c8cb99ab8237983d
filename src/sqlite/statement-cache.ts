import type { Statement } from 'better-sqlite3';
import type { Db } from './connection.ts';
import { connectionState, slot } from './connection-state.ts';

/*
 * Statements prepared once per connection and reused, keyed by their SQL.
 * A follower applies a batch per source commit, and compiling the same
 * dozen statements for each (a few hundred µs) used to cost more than
 * running them. SQLite re-prepares a cached statement by itself when a
 * schema it reads changes (a rebuilt target table, a dropped work table), so
 * reuse never runs a stale plan. The SQL must not embed per-batch values:
 * bind them (see JournalRange in capture/schema.ts).
 */

/** How rows come back: objects, arrays (`raw`), or the first column (`pluck`). */
export type RowMode = 'object' | 'raw' | 'pluck';

/** Statements kept per connection, over the three modes. */
const LIMIT = 256;

/*
 * One map per row mode, keyed by the SQL itself: a key made by joining the
 * mode to the SQL was a new string at every call, which V8 copied flat and
 * hashed whole (a few KB for an apply statement), about a tenth of a
 * follower's pass. A constant SQL string keeps its hash.
 */
const statements = slot('statements', () => ({
  object: new Map<string, Statement>(),
  raw: new Map<string, Statement>(),
  pluck: new Map<string, Statement>(),
}));

export function cachedStatement(db: Db, sql: string, mode: RowMode = 'object'): Statement {
  const caches = connectionState(db).get(statements);
  const cache = caches[mode];
  const hit = cache.get(sql);
  if (hit !== undefined) {
    // Most recently used last, so that eviction below takes the least recently used: only once the cache is half
    // full (moving each hit grew and rehashed the map every few batches of a follower, whose few dozen never leave).
    if (held(caches) >= LIMIT / 2) {
      cache.delete(sql);
      cache.set(sql, hit);
    }
    return hit;
  }
  const stmt = db.prepare(sql);
  if (mode === 'raw') stmt.raw(true);
  else if (mode === 'pluck') stmt.pluck(true);
  if (held(caches) >= LIMIT) {
    // The least recently used of the largest map (the other modes keep theirs).
    const largest = [caches.object, caches.raw, caches.pluck].reduce((a, b) => (b.size > a.size ? b : a));
    largest.delete(largest.keys().next().value as string);
  }
  cache.set(sql, stmt);
  return stmt;
}

/** Statements held over the three modes. */
function held(caches: { readonly [mode in RowMode]: ReadonlyMap<string, Statement> }): number {
  return caches.object.size + caches.raw.size + caches.pluck.size;
}
