import fs from 'node:fs';
import path from 'node:path';
import type { Syncer, SyncReport } from '../apply/sync.ts';
import { reportJson } from './sync.ts';

export interface FollowOptions {
  readonly json?: boolean;
  /** Fallback poll interval (ms) when no file event arrives. */
  readonly pollMs?: number;
  readonly onReport: (r: SyncReport) => void;
}

/**
 * Keeps a Syncer running: wakes on writes to the source's database and WAL
 * files (fs.watch), with a cheap PRAGMA data_version poll as the fallback,
 * and runs a sync pass only when another connection committed. SIGINT and
 * SIGTERM finish the pass in flight, then return.
 */
export async function follow(syncer: Syncer, options: FollowOptions): Promise<void> {
  const db = syncer.session.db;
  const source = path.resolve(syncer.session.sourcePath);
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
    watcher = undefined; // the poll below still runs
  }
  const pollMs = options.pollMs ?? (watcher === undefined ? 20 : 250);
  const dataVersion = db.prepare('PRAGMA main.data_version').pluck();
  let seen = -1;
  try {
    while (!stopping) {
      const v = Number(dataVersion.get() as bigint);
      if (v !== seen) {
        seen = v;
        const report = await syncer.runOnce();
        options.onReport(report);
        if (options.json === true) process.stdout.write(`${JSON.stringify(reportJson(report))}\n`);
        continue; // something may have committed during the pass
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          wake = undefined;
          resolve();
        }, pollMs);
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
