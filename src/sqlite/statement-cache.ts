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

const LIMIT = 256;
const statements = slot('statements', () => new Map<string, Statement>());

export function cachedStatement(db: Db, sql: string, mode: RowMode = 'object'): Statement {
  const cache = connectionState(db).get(statements);
  const key = `${mode}\u0000${sql}`;
  const hit = cache.get(key);
  if (hit !== undefined) {
    // Most recently used last, so that eviction below takes the least recently used.
    cache.delete(key);
    cache.set(key, hit);
    return hit;
  }
  const stmt = db.prepare(sql);
  if (mode === 'raw') stmt.raw(true);
  else if (mode === 'pluck') stmt.pluck(true);
  if (cache.size >= LIMIT) cache.delete(cache.keys().next().value as string);
  cache.set(key, stmt);
  return stmt;
}
