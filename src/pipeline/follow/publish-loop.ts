import type { Publisher, PublishPass, PublishedSnapshotReport } from '../../broker/index.ts';
import { waitForChange } from './wait.ts';

/*
 * The one publish follow loop: `publish --follow` (src/cli/publish.ts) and
 * the publish part of `sluice run` keep a Publisher going through it. Only
 * types come from the broker here: the caller has loaded it (by import(),
 * so that nothing else loads the NATS client).
 */

/** An idle follower looks at most this often whether the stream's retention dropped its snapshot. */
const SNAPSHOT_CHECK_MS = 5000;
/** A busy one at most this often, after a pass (not after each: a pass comes with every commit). */
const PASS_SNAPSHOT_CHECK_MS = 1000;
/**
 * A pass starts at least this long after the one before it (the first after
 * a quiet spell at once): while the source commits often, what it commits
 * meanwhile goes out in one message, not one message per commit. Every
 * message costs each subscriber a wake, a read, a target transaction and an
 * ack, and the broker a store and a delivery per subscriber: at 1k commits/s
 * one message each kept a 2-core machine busy with four subscribers
 * (bench/fan-out.ts); this bounds the messages to 1000 / PASS_GAP_MS a
 * second, for at most PASS_GAP_MS more latency.
 */
const PASS_GAP_MS = 5;
/**
 * The gap of a publisher of segments alone. A segment message costs each
 * subscriber about twice a JSONL one of the same few events (it is written
 * to a file, checked, attached and applied: docs/broker.md, "Formats"), so
 * its messages come half as often: at 1k commits/s to four subscribers,
 * about 500 messages in 5 s instead of 570-830, and a p99 of 21-36 ms
 * instead of 68-161 on a loaded 2-core machine (bench/fan-out.ts --format
 * segment), for at most 5 ms more latency.
 */
const SEGMENT_PASS_GAP_MS = 10;

export interface PublishLoopOptions {
  /** Aborted: the pass in flight finishes, no other starts. Without one, SIGINT/SIGTERM stop it. */
  readonly signal?: AbortSignal;
  /** Each pass's figures. */
  readonly onPass: (p: PublishPass) => void;
  /** Where the snapshots published while idle are told. */
  readonly tally: { snapshots: PublishedSnapshotReport[] };
}

/**
 * Publishes a pass at once and again each time the source commits, until
 * stopped; checks that the stream still holds a snapshot (a new one is
 * published when its retention dropped it) at most every second after a
 * pass, and every 5 s while idle.
 *
 * @example
 * await followPublisher(publisher, 'app.db', { onPass: (p) => console.log(p.events), tally: { snapshots: [] } });
 */
export async function followPublisher(p: Publisher, sourcePath: string, options: PublishLoopOptions): Promise<void> {
  // Passes and snapshot checks one at a time: both publish to the stream.
  let chain: Promise<unknown> = Promise.resolve();
  const serial = <T>(fn: () => Promise<T>): Promise<T> => {
    const next = chain.then(fn);
    chain = next.catch(() => {});
    return next;
  };
  let idleError: unknown;
  let lastPass = Number.NEGATIVE_INFINITY;
  const passGap = p.formats.includes('jsonl') ? PASS_GAP_MS : SEGMENT_PASS_GAP_MS;
  const pass = async () => {
    const gap = lastPass + passGap - performance.now();
    if (gap >= 1) await pause(gap, options.signal);
    lastPass = performance.now();
    options.onPass(await serial(() => p.runOnce({ snapshotCheckMs: PASS_SNAPSHOT_CHECK_MS })));
  };
  // waitForChange runs the first pass itself, from a data_version read before it: a commit that lands
  // while a pass reads the journal brings another pass.
  await waitForChange(p.db, sourcePath, pass, {
    ...(options.signal === undefined ? {} : { signal: options.signal }),
    onIdle: () => {
      if (idleError !== undefined) throw idleError;
      void serial(() => p.checkSnapshot(options.tally, SNAPSHOT_CHECK_MS)).catch((err: unknown) => (idleError = err));
    },
  });
  await chain;
  if (idleError !== undefined) throw idleError;
}

/** Sleeps `ms`, or less if `signal` aborts. */
function pause(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted === true) return resolve();
    const done = () => {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const t = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}
