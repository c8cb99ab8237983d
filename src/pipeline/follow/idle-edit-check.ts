import type { Syncer, SyncReport } from '../../apply/sync/index.ts';

import { QUIET_POLL_MS, WATCHED_POLL_MS } from './wait.ts';

/**
 * A follower's look for hand edits of its target while no pass runs
 * (Syncer.noticeTargetEdits): a projection another program changed is
 * suspended (TARGET_EDITED) and reported like a pass. The same look
 * finishes a scrubbed drop's checkpoint a reader kept owed
 * (Syncer.finishScrub), which no pass may come to do. On a timer of its own,
 * not in the wait's onIdle, which a reader of the source that keeps touching
 * its files (every open as root changes the owner of its -wal) can keep
 * from ever running. Passes go through `during`, so the check never runs in
 * one; an error it meets is thrown by `rethrow` (from the follower's loop).
 */
export function idleEditCheck(syncer: Syncer, report: (r: SyncReport) => void, quiet: () => boolean = () => false) {
  let passing = false;
  let failed: { err: unknown } | undefined;
  let timer: NodeJS.Timeout | undefined;
  const look = () => {
    timer = setTimeout(look, quiet() ? QUIET_POLL_MS : WATCHED_POLL_MS);
    if (passing || failed !== undefined) return;
    try {
      // And a scrubbed drop's checkpoint a reader kept from finishing (Syncer.finishScrub), while the source is quiet.
      syncer.finishScrub();
      const r = syncer.noticeTargetEdits();
      if (r !== undefined) report(r);
    } catch (err) {
      failed = { err };
    }
  };
  timer = setTimeout(look, WATCHED_POLL_MS);
  return {
    async during<T>(pass: () => Promise<T>): Promise<T> {
      this.rethrow();
      passing = true;
      try {
        return await pass();
      } finally {
        passing = false;
      }
    },
    rethrow(): void {
      if (failed !== undefined) throw failed.err;
    },
    stop(): void {
      clearTimeout(timer);
    },
  };
}
