import type { Syncer, SyncReport } from '../apply/sync.ts';
import { reportJson } from './sync.ts';
import { waitForChange } from './wait.ts';

export interface FollowOptions {
  readonly json?: boolean;
  readonly onReport: (r: SyncReport) => void;
}

/**
 * Keeps a Syncer running until SIGINT/SIGTERM: a pass at start, then one
 * each time the source commits. The pass in flight finishes before return.
 */
export async function follow(syncer: Syncer, options: FollowOptions): Promise<void> {
  const pass = async () => {
    const report = await syncer.runOnce();
    options.onReport(report);
    if (options.json === true) process.stdout.write(`${JSON.stringify(reportJson(report))}\n`);
  };
  await pass();
  await waitForChange(syncer.session.db, syncer.session.sourcePath, pass);
}
