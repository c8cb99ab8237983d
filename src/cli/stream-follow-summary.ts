import { InvalidArgumentError, Option } from 'commander';
import { parseWholeNumber } from './enable.ts';
import { seconds } from './follow-summary.ts';

/*
 * What `publish --follow` and `subscribe --follow` say in human mode, as
 * `sync --follow` does (follow.ts): a start line, a one-line summary every
 * --summary-interval ms, and a last line when SIGINT/SIGTERM stops them. They
 * count the batches of a stream (published, or applied to a target), not a
 * sync's projections, so the tally is their own; the option, its default, the
 * timer and the wording of the durations are sync's.
 */

/** The longest interval a timer takes (Node sets a longer one, or 0, to 1 ms: a summary every millisecond). */
const LONGEST_TIMER_MS = 2_147_483_647;

/** --summary-interval MS: a whole number of ms from 1 to the longest a timer takes (about 24.8 days). */
export function parseSummaryInterval(value: string): number {
  const n = parseWholeNumber(value);
  if (n < 1 || n > LONGEST_TIMER_MS)
    throw new InvalidArgumentError(`expected a whole number of ms from 1 to ${LONGEST_TIMER_MS} (about 24.8 days), got "${value}"`);
  return n;
}

/** The --summary-interval option, as sync has it (`what`: what the summary says). */
export function summaryIntervalOption(what: string): Option {
  return new Option('--summary-interval <ms>', `with --follow, without --json: print a one-line summary (${what}) this often`)
    .argParser(parseSummaryInterval)
    .default(60_000);
}

/** The counts of a stream follower. */
export class StreamFollowTally {
  readonly #verb: 'published' | 'applied';
  readonly #started = Date.now();
  #events = 0;
  #batches = 0;
  #atLastLine = 0;

  constructor(verb: 'published' | 'applied') {
    this.#verb = verb;
  }

  /** A batch published (acknowledged by the broker) or applied (committed to the target). */
  batch(events: number): void {
    this.#events += events;
    this.#batches++;
  }

  /** The line printed every summary interval; `where` says where the follower is (its seq, its lag). */
  summary(intervalMs: number, where: string): string {
    const recent = this.#events - this.#atLastLine;
    this.#atLastLine = this.#events;
    return `following: ${recent} events ${this.#verb} in the last ${seconds(intervalMs)}, ${this.#events} in ${this.#batches} batches since start; ${where}`;
  }

  /** The line printed when a signal stops the follow. */
  final(signal: string, where: string): string {
    return `stopped by ${signal} after ${seconds(Date.now() - this.#started)}: ${this.#events} events ${this.#verb} in ${this.#batches} batches; ${where}`;
  }
}

/** Says `start` now and `line()` every `intervalMs`, until the returned function is called. */
export function startSummaries(say: (line: string) => void, start: string, intervalMs: number, line: () => string): () => void {
  say(start);
  const timer = setInterval(() => say(line()), Math.max(1, intervalMs));
  return () => clearInterval(timer);
}
