import { waitForChange, type WaitOptions } from '../../../src/pipeline/follow/index.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';

/** Yields to the event loop for `ms`. */
export const turn = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A WAL source at `file` with t(id, v), through a writer connection. */
export function sourceWithT(file: string): Db {
  const w = openDatabase(file, { create: true, wal: true });
  w.exec('CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)');
  return w;
}

/**
 * waitForChange on a read-only connection to `path` (the source, or a name
 * of it), whose pass counts t's rows: `seen()` is that count as the last
 * pass read it. `stop()` ends the wait and closes the connection.
 */
export function countingWait(path: string, options: Omit<WaitOptions, 'signal'> = {}) {
  const db = openDatabase(path, { readonly: true });
  const count = db.prepare('SELECT count(*) FROM t').pluck();
  const ac = new AbortController();
  let seen = 0;
  const waiting = waitForChange(
    db,
    path,
    () => {
      seen = Number(count.get() as bigint);
    },
    { ...options, signal: ac.signal },
  );
  return {
    seen: () => seen,
    async stop(): Promise<void> {
      ac.abort();
      await waiting;
      db.close();
    },
  };
}
