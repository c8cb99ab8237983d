import type { Syncer, SyncReport } from '../../apply/sync/index.ts';
import type { DefinitionInput } from '../../apply/projections/index.ts';
import { waitForChange } from './wait.ts';
import { idleEditCheck } from './idle-edit-check.ts';
import { FailedPassRetry } from './failed-pass-retry.ts';

/*
 * The one follow loop: `sync --follow` (src/cli/follow.ts adds its output)
 * and each target of `sluice run` (a worker thread, run/target-worker.ts)
 * keep a Syncer running through it, so both have the same latency, the
 * same acknowledgement pace and the same look for hand edits.
 */

/** Where a follower's definitions come from when they can change: the --projection files, or a pipeline file's declaration. */
export interface FollowedDefinitions {
  /** Whether they changed since last loaded; with `unlessLookedWithinMs`, false without a look when the last one is that recent. */
  changed(unlessLookedWithinMs?: number): boolean;
  /** The definitions, loaded again (throws what loading throws: the follower keeps the ones it has). */
  load(): Promise<DefinitionInput[]>;
}

export interface FollowLoopOptions {
  /** Aborted: the target transaction in flight finishes, no other starts, and the loop returns. */
  readonly signal: AbortSignal;
  /** Loaded again when they change, before a pass within 100 ms of it (one runs at once when the source is idle). */
  readonly definitions?: FollowedDefinitions;
  /** Says definitions that could not be loaded again (the ones loaded before are kept). */
  readonly onLoadError?: (err: unknown) => void;
  /** Each pass's report, and each idle look that found a hand edit. */
  readonly onReport: (r: SyncReport) => void;
  /** Told when a pass starts (true) and ends (false): sluice run says a pass in flight too long is stalled (run/pass-in-flight.ts). */
  readonly onPass?: (inFlight: boolean) => void;
}

/**
 * The acknowledgement rows in the source's _sluice_consumers are
 * informational and may lag: following writes them at most once a second
 * (a pass per commit would otherwise take the source's write lock once per
 * commit, beside the application's writers), when idle, and on exit.
 */
const ACK_INTERVAL_MS = 1000;

/** Before a pass, the definitions are looked at if they were not in this many ms (while idle, at each poll). */
const DEFINITIONS_LOOK_MS = 100;

/** A source with no commit for this long is quiet: the follower's idle looks slow down to QUIET_POLL_MS (wait.ts). */
const QUIET_MS = 10_000;

/**
 * Keeps a Syncer running until `signal` is aborted: a pass at start, then
 * one each time the source commits (waitForChange runs both). An abort lets
 * the target transaction in flight finish and starts no other: a long
 * catch-up stops after its current batch, and the next run continues from
 * the target's cursor.
 *
 * @example
 * const stop = new AbortController();
 * process.once('SIGTERM', () => stop.abort());
 * await followSyncer(syncer, { signal: stop.signal, onReport: (r) => console.log(r.sourceSeq) });
 */
export async function followSyncer(syncer: Syncer, options: FollowLoopOptions): Promise<void> {
  const files = options.definitions;
  const said = options.onReport;
  let passedMs = Date.now();
  const quiet = () => Date.now() - passedMs >= QUIET_MS;
  const edits = idleEditCheck(syncer, said, quiet);
  const retry = new FailedPassRetry();
  let retrying = false; // the pass onIdle asks for is a retry (it leaves `quiet` as it was)
  const pass = () =>
    edits.during(async () => {
      const active = !retrying;
      retrying = false;
      if (active) passedMs = Date.now();
      if (files?.changed(DEFINITIONS_LOOK_MS) === true) {
        try {
          syncer.setDefinitions(await files.load());
        } catch (err) {
          options.onLoadError?.(err);
        }
      }
      options.onPass?.(true);
      let report: SyncReport;
      try {
        report = await syncer.runOnce({ acknowledgeIntervalMs: ACK_INTERVAL_MS, leaveQuiet: true, signal: options.signal });
      } finally {
        options.onPass?.(false);
      }
      retry.passed(syncer.failedMayClear);
      said(report);
      if (active) passedMs = Date.now(); // (quiet counts from the end of a long catch-up)
    });
  try {
    try {
      // The first pass too, from a data_version read before it (wait.ts): a commit during it or right after it brings another.
      await waitForChange(syncer.session.db, syncer.session.sourcePath, pass, {
        signal: options.signal,
        quiet,
        onIdle: async () => {
          // A target deleted while the source is idle stops the follower too (TARGET_GONE); one written under it by
          // something other than a commit (an older copy copied over it, or a checkpoint) gets a pass now, from the
          // cursors it stores: a restored target catches up without waiting for the source's next commit.
          const rewritten = syncer.checkTarget();
          syncer.checkSource(); // and a source replaced by another file (SOURCE_REPLACED)
          edits.rethrow(); // the idle look for hand edits of the target failed (idle-edit-check.ts)
          // The cursors the passes left at their projections' quiet tables move to the source's position.
          await edits.during(() => syncer.settleQuiet());
          syncer.flushAcknowledgements({ wait: false, intervalMs: ACK_INTERVAL_MS });
          // The definitions changed while the source is idle: a pass now takes them in; and a
          // pass that left a projection failed is tried again, since no commit may come to (failed-pass-retry.ts).
          if (files?.changed() === true || rewritten) return true;
          // DDL in the target since the last pass: a trigger or UNIQUE index a projection is suspended by, dropped since,
          // which a pass lifts now; or a projection's table dropped, renamed away or reshaped, which a pass says now.
          if (syncer.targetSchemaChanged()) return true;
          retrying = retry.due();
          return retrying;
        },
      });
    } finally {
      try {
        // A stopped follower leaves every cursor at the source's position, as its passes saw it
        // (the idle look for hand edits stopped first: it never runs inside a target transaction).
        edits.stop();
        await syncer.settleQuiet();
      } catch {
        /* best effort: the next run steps them */
      }
      try {
        syncer.flushAcknowledgements();
      } catch {
        /* acknowledgements are informational; the error that ended the follow is the one to report */
      }
    }
  } finally {
    edits.stop();
  }
}
