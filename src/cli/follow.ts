import type { Syncer, SyncReport } from '../index.ts';
import { reportJson } from './sync-json.ts';
import { waitForChange } from './wait.ts';
import { idleEditCheck } from './idle-edit-check.ts';
import { stdout } from './closed-pipe.ts';
import { trapInterrupt } from './interrupt.ts';
import type { FollowTally } from './follow-summary.ts';
import type { DefinitionFiles } from './definition-files.ts';

export interface FollowOptions {
  readonly json?: boolean;
  /** The --projection files: loaded again when one changes, before a pass within 100 ms of it (one runs at once when the source is idle). */
  readonly definitions?: DefinitionFiles;
  /** Says a definition file that could not be loaded again (the definitions loaded before are kept). */
  readonly onLoadError?: (err: unknown) => void;
  readonly onReport: (r: SyncReport) => void;
  /**
   * Human mode: where the start line, a summary every `summaryIntervalMs`
   * and the final summary on SIGINT/SIGTERM go (not with --json), fed by `tally`.
   */
  readonly human?: {
    readonly say: (line: string) => void;
    readonly tally: FollowTally;
    readonly summaryIntervalMs: number;
    readonly start: string;
  };
}

/**
 * The acknowledgement rows in the source's _sluice_consumers are
 * informational and may lag: following writes them at most once a second
 * (a pass per commit would otherwise take the source's write lock once per
 * commit, beside the application's writers), when idle, and on exit.
 */
const ACK_INTERVAL_MS = 1000;

/** Before a pass, the --projection files are looked at if they were not in this many ms (while idle, at each poll). */
const DEFINITIONS_LOOK_MS = 100;

/**
 * Keeps a Syncer running until SIGINT/SIGTERM: a pass at start, then one
 * each time the source commits (waitForChange runs both). A signal lets the
 * target transaction in flight finish and starts no other: a long catch-up
 * stops after its current batch, and the next run continues from the
 * target's cursor.
 */
export async function follow(syncer: Syncer, options: FollowOptions): Promise<void> {
  const files = options.definitions;
  const said = (report: SyncReport) => {
    options.human?.tally.passDone(report);
    options.onReport(report);
    if (options.json === true) stdout().write(`${JSON.stringify(reportJson(report))}\n`);
  };
  const edits = idleEditCheck(syncer, said);
  const pass = () =>
    edits.during(async () => {
      if (files?.changed(DEFINITIONS_LOOK_MS) === true) {
        try {
          syncer.setDefinitions(await files.load());
        } catch (err) {
          options.onLoadError?.(err);
        }
      }
      said(await syncer.runOnce({ acknowledgeIntervalMs: ACK_INTERVAL_MS, signal: interrupt.signal }));
    });
  // SIGINT/SIGTERM also stop the pass in flight between two batches
  // (waitForChange's own handlers only keep another from starting).
  const interrupt = trapInterrupt();
  const human = options.human;
  human?.say(human.start);
  const timer =
    human === undefined ? undefined : setInterval(() => human.say(human.tally.summary(human.summaryIntervalMs)), human.summaryIntervalMs);
  try {
    try {
      // The first pass too, from a data_version read before it (wait.ts): a commit during it or right after it brings another.
      await waitForChange(syncer.session.db, syncer.session.sourcePath, pass, {
        onIdle: () => {
          syncer.checkTarget(); // a target deleted while the source is idle stops the follower too (TARGET_GONE)
          syncer.checkSource(); // and a source replaced by another file (SOURCE_REPLACED)
          edits.rethrow(); // the idle look for hand edits of the target failed (idle-edit-check.ts)
          syncer.flushAcknowledgements({ wait: false, intervalMs: ACK_INTERVAL_MS });
          // A definition file changed while the source is idle: a pass now takes it in.
          return files?.changed() === true;
        },
      });
    } finally {
      try {
        syncer.flushAcknowledgements();
      } catch {
        /* acknowledgements are informational; the error that ended the follow is the one to report */
      }
    }
  } finally {
    edits.stop();
    clearInterval(timer);
    interrupt.release();
  }
  // waitForChange returns on a signal (its own handlers), once the pass in flight is done.
  human?.say(human.tally.final(interrupt.received() ?? 'SIGINT'));
}
