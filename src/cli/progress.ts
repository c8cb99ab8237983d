import cliProgress from 'cli-progress';
import type { SyncProgress } from '../index.ts';
import { progressDetail, progressFigures } from './progress-figures.ts';

export interface ProgressOptions {
  readonly json?: boolean;
  readonly log?: string;
}

export interface ProgressReporter {
  readonly update: (p: SyncProgress) => void;
  /** False when nothing is shown: the caller need not ask the syncer for progress at all (it counts each batch's events, and a snapshot's rows). */
  readonly active: boolean;
  stop(): void;
}

/**
 * Progress for long work: a bar on a terminal (not with --json), JSON lines
 * on stderr with --log json, nothing otherwise. The bar is the share done
 * (progress-figures.ts): of a snapshot's rows, with rows/s; of the run's
 * range of events, with source events/s and the lag.
 */
export function progressReporter(options: ProgressOptions): ProgressReporter {
  if (options.log === 'json') {
    return {
      update: (p) => process.stderr.write(`${JSON.stringify({ t: Date.now(), ...p })}\n`),
      active: true,
      stop: () => undefined,
    };
  }
  if (options.json === true || process.stderr.isTTY !== true) return { update: () => undefined, active: false, stop: () => undefined };
  let bar: LazyBar | undefined;
  let current: { projection: string; started: number } | undefined;
  return {
    active: true,
    update: (p) => {
      if (current?.projection !== p.projection) current = { projection: p.projection, started: Date.now() };
      const f = progressFigures(p, p.elapsedMs ?? Date.now() - current.started);
      bar ??= lazyBar('{projection} [{bar}] {percentage}% {detail}');
      bar.show(f.share, { projection: p.projection, detail: progressDetail(p, f) });
    },
    stop: () => {
      bar?.stop();
      bar = undefined;
      current = undefined;
    },
  };
}

export interface WorkBar {
  /**
   * `done` of `total` units so far; `detail` is shown after the rate. `unit`
   * (default: the bar's own) names what is counted; when it changes, the
   * rate starts again from this update.
   */
  readonly update: (done: number, total: number, detail?: string, unit?: string) => void;
  /** False when nothing is shown (not a terminal, or --json): a caller need not gather progress at all. */
  readonly active: boolean;
  stop(): void;
}

/**
 * A bar for import, export and verify: on a terminal (stderr a TTY, not
 * --json) only, the share of `total` done and units/s.
 */
export function workBar(options: { readonly json?: boolean }, label: string, unit: string): WorkBar {
  if (options.json === true || process.stderr.isTTY !== true) return { update: () => undefined, active: false, stop: () => undefined };
  let started = Date.now();
  let counting = unit;
  let bar: LazyBar | undefined;
  return {
    active: true,
    update: (done, total, detail, what = unit) => {
      const changed = what !== counting;
      if (changed) {
        counting = what;
        started = Date.now();
      }
      const f = progressFigures({ startSeq: 0, seq: done, sourceSeq: Math.max(total, done), events: done }, Date.now() - started);
      const payload = {
        label,
        unit: what,
        done,
        of: Math.max(total, done),
        rate: f.rate,
        detail: detail === undefined ? '' : ` | ${detail}`,
      };
      bar ??= lazyBar('{label} [{bar}] {percentage}% {done}/{of} {unit} | {rate} {unit}/s{detail}');
      // Another unit is another step of the work: drawn at once, not at the bar's next redraw.
      bar.show(f.share, payload, changed);
    },
    stop: () => {
      bar?.stop();
      bar = undefined;
    },
  };
}

interface LazyBar {
  /** Shows `share` (0..1) done, with the format's fields from `payload`; the bar starts at its first show. `now`: drawn now, not at the next redraw. */
  show(share: number, payload: Record<string, unknown>, now?: boolean): void;
  stop(): void;
}

/** A bar on stderr in `format`, in thousandths, cleared when it stops. */
function lazyBar(format: string): LazyBar {
  let bar: cliProgress.SingleBar | undefined;
  return {
    show(share, payload, now = false) {
      const permille = Math.floor(share * 1000);
      if (bar === undefined) {
        bar = new cliProgress.SingleBar(
          { format, stream: process.stderr, hideCursor: true, clearOnComplete: true },
          cliProgress.Presets.shades_classic,
        );
        bar.start(1000, permille, payload);
      } else {
        bar.update(permille, payload);
        if (now) bar.render();
      }
    },
    stop: () => bar?.stop(),
  };
}
