import type { Syncer, SyncReport } from '../index.ts';
import { followSyncer, type FollowedDefinitions } from '../internal.ts';
import { reportJson } from './sync-json.ts';
import { stdout } from './closed-pipe.ts';
import { trapInterrupt } from './interrupt.ts';
import type { FollowTally } from './follow-summary.ts';

export interface FollowOptions {
  readonly json?: boolean;
  /** The --projection files: loaded again when one changes, before a pass within 100 ms of it (one runs at once when the source is idle). */
  readonly definitions?: FollowedDefinitions;
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
 * `sync --follow`: the follow loop (src/pipeline/follow/follow.ts) until
 * SIGINT/SIGTERM, with its output: a JSON line per pass, or the start line,
 * summaries and a final summary. Returns where it leaves the projections
 * (Syncer.standing), for the exit; undefined when that could not be read.
 */
export async function follow(syncer: Syncer, options: FollowOptions): Promise<SyncReport | undefined> {
  const said = (report: SyncReport) => {
    options.human?.tally.passDone(report);
    options.onReport(report);
    if (options.json === true) stdout().write(`${JSON.stringify(reportJson(report))}\n`);
  };
  // SIGINT/SIGTERM stop the pass in flight between two batches, and the wait for the next.
  const interrupt = trapInterrupt();
  const human = options.human;
  human?.say(human.start);
  const timer =
    human === undefined ? undefined : setInterval(() => human.say(human.tally.summary(human.summaryIntervalMs)), human.summaryIntervalMs);
  try {
    await followSyncer(syncer, {
      signal: interrupt.signal,
      onReport: said,
      ...(options.definitions === undefined ? {} : { definitions: options.definitions }),
      ...(options.onLoadError === undefined ? {} : { onLoadError: options.onLoadError }),
    });
  } finally {
    clearInterval(timer);
    interrupt.release();
  }
  // Where it leaves each projection, as the target stores it: a suspended one's lag counts (its events were not applied).
  let standing: SyncReport | undefined;
  let breaks: Map<string, string> | undefined;
  try {
    standing = syncer.standing();
    // Stopped before it rebuilt one whose cursor cannot continue: not "lag 0, resumes there".
    if (human !== undefined) breaks = syncer.cursorBreaks();
  } catch {
    standing = undefined; // (the summary then says what the passes saw)
  }
  human?.say(human.tally.final(interrupt.received() ?? 'SIGINT', standing, breaks));
  return standing;
}
