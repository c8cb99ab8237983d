import type { ProjectionHealth } from '../apply/check/index.ts';

/*
 * What a pipeline's state looks like from outside: `sluice health --config
 * FILE --json` prints a PipelineHealth, and `sluice run` serves a RunStatus
 * (the same object plus the process's own parts) at /healthz and to the
 * status page at /. Both are read-only views: nothing here writes.
 * The zod schemas that check them are src/cli/json-schemas.ts
 * (pipelineHealthOutput, runStatusOutput); docs/cli.md documents them.
 */

/** A projection of a declared target: health's view, and whether the pipeline file declares it. */
export interface DeclaredProjectionHealth extends ProjectionHealth {
  /**
   * true: the file declares it (by name, or as a mirror under "*");
   * false: the target holds it and the file does not (undeclared: `problems`
   * names `sluice drop`, unless the file says `prune: true`).
   */
  readonly declared: boolean;
}

export interface TargetHealth {
  /** The target database, absolute. */
  readonly path: string;
  /** The declared source's path (absolute), or null for a target fed by `subscribe`. */
  readonly source: string | null;
  readonly via: 'sync' | 'subscribe';
  /** Whether the file exists; a declared target that is missing needs action (`run` builds it). */
  readonly exists: boolean;
  readonly ok: boolean;
  /** Every projection declared or held, with health's fields; one declared and not held yet has state `missing`. */
  readonly projections: readonly DeclaredProjectionHealth[];
  /** The file's lag bounds for this target. */
  readonly bounds: { readonly maxLagEvents: number | null; readonly maxLagMs: number | null };
  /** Each problem of the target as a whole, with its fix (missing file, unreadable target, ...). */
  readonly problems: readonly string[];
}

export interface CapturedTableHealth {
  readonly table: string;
  /** Whether the file declares its capture. */
  readonly declared: boolean;
  /** Whether the source captures it now (catalog row present). */
  readonly captured: boolean;
  readonly armed: boolean;
  /** The mode the source captures it in, or null when not captured. */
  readonly mode: string | null;
  /** What is wrong, with the fix; absent when nothing is. */
  readonly problem?: string;
}

export interface AcknowledgementHealth {
  /** The consumer name as `sluice status` prints it. */
  readonly consumer: string;
  readonly target: string | null;
  readonly projection: string | null;
  /** Whether a declared target's declared projection is this consumer. */
  readonly declared: boolean;
  readonly seq: number;
}

export interface SourceHealth {
  /** The source database, absolute. */
  readonly path: string;
  readonly ok: boolean;
  /** Null when the source has no capture yet, or cannot be read. */
  readonly sourceId: string | null;
  readonly seq: number | null;
  readonly tables: readonly CapturedTableHealth[];
  readonly acknowledgements: readonly AcknowledgementHealth[];
  readonly problems: readonly string[];
}

export interface PipelineHealth {
  /** True when everything declared exists, is active and within its bounds, and nothing is undeclared. */
  readonly ok: boolean;
  /** The pipeline file, absolute. */
  readonly config: string;
  /** When this was read (ms since the epoch). */
  readonly checkedMs: number;
  readonly sources: readonly SourceHealth[];
  readonly targets: readonly TargetHealth[];
  /** Every problem above, one line each with its fix (the first is what to do first). */
  readonly problems: readonly string[];
  /**
   * `health --config` only, while a `sluice run` holds the file's lock:
   * that process, and what it knows that the files do not say (asked at
   * its /healthz). Absent when no run holds the file.
   */
  readonly running?: RunningRun;
}

/** The `sluice run` process that holds a pipeline file's lock, as `health --config` asked it. */
export interface RunningRun {
  /** Its process id, as it recorded with its lock (null when it has not yet). */
  readonly pid: number | null;
  /** The /healthz it was asked at (the file's `listen`); null when it could not be asked (`note` says why). */
  readonly healthz: string | null;
  /** Its parts, as it answered; null when it was not asked or did not answer. */
  readonly parts: readonly RunPart[] | null;
  /**
   * What it says needs action (its file not loading, a target building, a
   * part failing, not running or stalled: the wording of its /healthz), or
   * that it did not answer: each is in the pipeline's `problems` too.
   */
  readonly problems: readonly string[];
  /** Why what only that process knows was not read (no `listen`, its port 0, another host): not a problem itself. */
  readonly note?: string;
}

/** One supervised part of a `sluice run` process. */
export interface RunPart {
  readonly kind: 'capture' | 'target' | 'publish' | 'subscribe' | 'http';
  /** What it works on: a source or target path, or the listen address. */
  readonly name: string;
  readonly state: 'starting' | 'running' | 'retrying' | 'stopping' | 'stopped';
  /** What a target part is doing: building a projection from a snapshot (a first build: /healthz is 503), or following its source. */
  readonly phase?: 'building' | 'following' | undefined;
  /**
   * A following target whose pass in flight has committed nothing for longer
   * than its bound (health: maxPassMs, default 30 s): a custom handler that
   * awaits what never comes, or loops. /healthz is 503 meanwhile.
   */
  readonly stalled?: { readonly sinceMs: number; readonly boundMs: number } | undefined;
  /** The last failure, kept until the part runs again without one. */
  readonly failure: {
    readonly code: string;
    readonly message: string;
    readonly ms: number;
    /** Failed attempts in a row. */
    readonly attempts: number;
    /** When the next attempt starts (ms since the epoch), while retrying. */
    readonly retryMs: number | null;
  } | null;
}

/** What `sluice run` serves at /healthz (200 when ok, else 503) and to its status page. */
export interface RunStatus extends PipelineHealth {
  readonly run: {
    readonly pid: number;
    readonly startedMs: number;
    /** Set while the pipeline file on disk does not load: the old configuration keeps running, and ok is false. */
    readonly configError: { readonly code: string; readonly message: string; readonly ms: number } | null;
    /** When the running configuration was loaded. */
    readonly loadedMs: number;
    readonly parts: readonly RunPart[];
  };
}
