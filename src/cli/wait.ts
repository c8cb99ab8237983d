import fs from 'node:fs';
import path from 'node:path';
import type { Db } from '../sqlite/connection.ts';

/**
 * Calls `onChange` whenever another connection commits to the source, until
 * SIGINT/SIGTERM. Wakes on writes to the database and WAL files (fs.watch),
 * with a cheap PRAGMA data_version poll as the fallback.
 */
export async function waitForChange(db: Db, sourcePath: string, onChange: () => void | Promise<void>, pollMs?: number): Promise<void> {
  const source = path.resolve(sourcePath);
  const base = path.basename(source);
  let stopping = false;
  let wake: (() => void) | undefined;
  const nudge = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const onSignal = () => {
    stopping = true;
    nudge();
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  let watcher: fs.FSWatcher | undefined;
  try {
    watcher = fs.watch(path.dirname(source), (_event, file) => {
      if (file !== null && (file === base || file === `${base}-wal`)) nudge();
    });
  } catch {
    watcher = undefined;
  }
  const interval = pollMs ?? (watcher === undefined ? 20 : 250);
  const dataVersion = db.prepare('PRAGMA main.data_version').pluck();
  let seen = Number(dataVersion.get() as bigint);
  try {
    while (!stopping) {
      const v = Number(dataVersion.get() as bigint);
      if (v !== seen) {
        seen = v;
        await onChange();
        continue; // more may have committed while we worked
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          wake = undefined;
          resolve();
        }, interval);
        wake = () => {
          clearTimeout(timer);
          resolve();
        };
      });
    }
  } finally {
    watcher?.close();
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
  }
}
