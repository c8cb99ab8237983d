import pRetry from 'p-retry';
import { errorCode, errorMessage } from '../../errors.ts';
import type { Pipeline, RunPart } from '../index.ts';
import type { PartLog } from './log.ts';

/*
 * A part of a `sluice run` process (a source's capture, a target, a
 * publisher, a subscriber, the HTTP server) is a kind (PartKind) and a
 * configuration read from the pipeline. Each runs supervised: a failure is
 * recorded in its RunPart and retried with backoff, and never stops the
 * others. The kinds are a registry (parts.ts), not a switch.
 */

/** What every part of one process shares: set up by the runner (runner.ts). */
export interface RunShared {
  readonly pipelineFile: string;
  /** The pipeline the process runs now (the last one that loaded). */
  pipeline(): Pipeline;
  /** Each pass's report of a target, for /metrics. */
  recordPass(target: string, report: { readonly projections: readonly import('../index.ts').MetricsRecord[] }): void;
  /** Takes (or keeps) the follower lock of a target; throws TARGET_FOLLOWED when another process follows it. */
  lockTarget(target: string): void;
  /** The status served at /healthz (cached), with its HTTP code. */
  status(): { readonly code: number; readonly body: unknown };
  /** The Prometheus text of /metrics. */
  metrics(): Promise<{ readonly contentType: string; readonly text: string }>;
}

export interface PartContext {
  readonly log: PartLog;
  /** Aborted when the part must stop: it finishes what is in flight, starts nothing more, and returns. */
  readonly signal: AbortSignal;
  readonly shared: RunShared;
  /**
   * The part has done its work, successfully: a failure recorded before is
   * cleared, and its backoff starts again. Said after real work (a pass that
   * applied or published, or one that found nothing to do after its plan
   * held), never merely once it has started: a part that fails at every
   * attempt after starting would otherwise show running between attempts
   * (/healthz 200) and never back off.
   */
  ok(): void;
  /** What the part is doing, for /healthz (a target: building its first snapshot, or following). */
  phase(phase: RunPart['phase']): void;
  /** How the status reads whether the part's work in flight is stalled (a following target's pass: pass-in-flight.ts). */
  stall(probe: () => RunPart['stalled']): void;
}

export interface PartKind<C> {
  readonly kind: RunPart['kind'];
  /** Every part of this kind the pipeline declares. */
  configs(pipeline: Pipeline): readonly C[];
  /** What it works on (a source or target path, the listen address): its name in the status and the log. */
  name(config: C): string;
  /** A fingerprint of what the part needs to restart for: a reload restarts a part whose fingerprint changed. */
  fingerprint(config: C): string;
  /** Whether the other parts wait for its first attempt at start and on reload (capture: enabled before the targets read it). */
  readonly first?: boolean;
  /** Runs until ctx.signal aborts (resolves), or fails (rejects: retried with backoff). */
  run(config: C, ctx: PartContext): Promise<void>;
}

/** A failure as a part records it: a code (a reason code, or the SQLite one) and one line. */
export class PartFailure extends Error {
  readonly code: string;
  constructor(code: string, message: string) {
    super(message);
    this.code = code;
  }
  static of(err: unknown): PartFailure {
    if (err instanceof PartFailure) return err;
    const code = errorCode(err);
    return new PartFailure(typeof code === 'string' ? code : 'RUN_PART_FAILED', String(errorMessage(err)));
  }
}

const BACKOFF = { factor: 2, minTimeout: 500, maxTimeout: 30_000 } as const;

/** The wait after the `attempt`th failure in a row (since the part last ran). */
function backoffMs(attempt: number): number {
  return Math.min(BACKOFF.minTimeout * BACKOFF.factor ** (attempt - 1), BACKOFF.maxTimeout);
}

/** Waits `ms`, or less when `signal` aborts. */
function waitUnlessAborted(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}

/** Counts the changes of every part's state and phase in the process (SupervisedPart.changed). */
let changes = 0;

/** One part, supervised: started, retried with backoff after each failure, stopped on request. */
export class SupervisedPart<C> {
  readonly kind: PartKind<C>;
  readonly config: C;
  readonly name: string;
  /** Taken when it starts: a fingerprint may read files (a handler module's stamp), which a reload compares with today's. */
  readonly fingerprint: string;
  readonly #log: PartLog;
  readonly #stop = new AbortController();
  /** Ends a wait between two attempts: aborted only once the attempt in flight is done (p-retry rejects at once on its signal). */
  readonly #retryStop = new AbortController();
  #current: Promise<void> | undefined;
  #stateNow: RunPart['state'] = 'starting';
  #phaseNow: RunPart['phase'] = undefined;
  #changed = ++changes;
  #stall: (() => RunPart['stalled']) | undefined;
  #failure: RunPart['failure'] = null;
  #attempts = 0;
  #done: Promise<void> | undefined;
  #firstAttempt: Promise<void>;
  #firstSettled!: () => void;

  get #state(): RunPart['state'] {
    return this.#stateNow;
  }
  set #state(state: RunPart['state']) {
    if (state !== this.#stateNow) this.#changed = ++changes;
    this.#stateNow = state;
  }
  get #phase(): RunPart['phase'] {
    return this.#phaseNow;
  }
  set #phase(phase: RunPart['phase']) {
    if (phase !== this.#phaseNow) this.#changed = ++changes;
    this.#phaseNow = phase;
  }

  /**
   * When its state or phase last changed (or it was made), as a number no
   * other change of any part in the process has: what was read of the
   * pipeline before it (a plan) may no longer hold, a build having ended.
   */
  get changed(): number {
    return this.#changed;
  }

  constructor(kind: PartKind<C>, config: C, log: PartLog) {
    this.kind = kind;
    this.config = config;
    this.name = kind.name(config);
    this.fingerprint = kind.fingerprint(config);
    this.#log = log;
    this.#firstAttempt = new Promise((resolve) => (this.#firstSettled = resolve));
  }

  /** Starts it; `firstAttempt` resolves once its first attempt worked or failed. */
  start(shared: RunShared): void {
    const signal = this.#stop.signal;
    const ctx: PartContext = {
      log: this.#log,
      signal,
      shared,
      ok: () => {
        this.#state = 'running';
        if (this.#failure !== null) this.#log('info', 'recovered', `running again after ${this.#attempts} failed attempt(s)`);
        this.#failure = null;
        this.#attempts = 0;
        this.#firstSettled();
      },
      phase: (p) => (this.#phase = p),
      stall: (probe) => (this.#stall = probe),
    };
    this.#done = pRetry(
      async () => {
        if (signal.aborted) return;
        this.#current = this.kind.run(this.config, ctx);
        try {
          await this.#current;
        } catch (err) {
          if (signal.aborted) return; // a failure while stopping is not retried
          throw PartFailure.of(err);
        }
      },
      {
        retries: Number.POSITIVE_INFINITY,
        // The wait is this part's own (below), from its failures since it last ran: p-retry's counts every failure of the
        // part's life, so after a few that each recovered, the wait it made (30 s) was not the one logged and shown.
        factor: 1,
        minTimeout: 0,
        maxTimeout: 0,
        randomize: false,
        signal: this.#retryStop.signal,
        onFailedAttempt: async ({ error }) => {
          const f = PartFailure.of(error);
          this.#attempts += 1;
          const wait = backoffMs(this.#attempts);
          this.#state = 'retrying';
          this.#phase = undefined;
          this.#failure = { code: f.code, message: f.message, ms: Date.now(), attempts: this.#attempts, retryMs: Date.now() + wait };
          this.#log('error', 'failed', `${f.code}: ${f.message}`, { code: f.code, attempts: this.#attempts });
          this.#log('info', 'retry', `next attempt in ${wait} ms`, { retryMs: wait });
          this.#firstSettled();
          await waitUnlessAborted(wait, this.#retryStop.signal);
        },
      },
    ).then(
      () => {
        this.#state = 'stopped';
        this.#firstSettled();
      },
      () => {
        this.#state = 'stopped'; // aborted while waiting to retry
        this.#firstSettled();
      },
    );
  }

  firstAttempt(): Promise<void> {
    return this.#firstAttempt;
  }

  /** Stops it: what is in flight finishes, nothing more starts. */
  async stop(): Promise<void> {
    // (Shown while it finishes what is in flight: /healthz is 503 meanwhile, not 200 over a target nobody follows.)
    if (this.#state !== 'stopped') this.#state = 'stopping';
    this.#stop.abort();
    await this.#current?.catch(() => undefined);
    this.#retryStop.abort();
    await this.#done;
    this.#state = 'stopped';
    if (this.#failure !== null) this.#failure = { ...this.#failure, retryMs: null };
  }

  status(): RunPart {
    // Only while following: a building target is not ok anyway, and one retrying or stopping has no pass of its own in flight.
    const stalled = this.#state === 'running' && this.#phase === 'following' ? this.#stall?.() : undefined;
    return {
      kind: this.kind.kind,
      name: this.name,
      state: this.#state,
      ...(this.#phase === undefined ? {} : { phase: this.#phase }),
      ...(stalled === undefined ? {} : { stalled }),
      failure: this.#failure,
    };
  }
}
