import cliProgress from 'cli-progress';
import type { SyncProgress } from '../index.ts';

export interface ProgressOptions {
  readonly json?: boolean;
  readonly log?: string;
}

export interface ProgressReporter {
  readonly update: (p: SyncProgress) => void;
  stop(): void;
}

/**
 * Progress for long work: a bar on a terminal (not with --json), JSON lines
 * on stderr with --log json, nothing otherwise.
 */
export function progressReporter(options: ProgressOptions): ProgressReporter {
  if (options.log === 'json') {
    return {
      update: (p) => process.stderr.write(`${JSON.stringify({ t: Date.now(), ...p })}\n`),
      stop: () => undefined,
    };
  }
  if (options.json === true || process.stderr.isTTY !== true) return { update: () => undefined, stop: () => undefined };
  const started = Date.now();
  let bar: cliProgress.SingleBar | undefined;
  return {
    update: (p) => {
      if (bar === undefined) {
        bar = new cliProgress.SingleBar(
          { format: '{projection} [{bar}] {phase} seq {value}/{total} | {events} events | {rate} ev/s', stream: process.stderr, hideCursor: true, clearOnComplete: true },
          cliProgress.Presets.shades_classic,
        );
        bar.start(Math.max(1, p.sourceSeq), p.seq, { projection: p.projection, phase: p.phase, events: p.events, rate: 0 });
      }
      const secs = Math.max(0.001, (Date.now() - started) / 1000);
      bar.setTotal(Math.max(1, p.sourceSeq, p.seq));
      bar.update(p.seq, { projection: p.projection, phase: p.phase, events: p.rows ?? p.events, rate: Math.round(p.events / secs) });
    },
    stop: () => {
      bar?.stop();
      bar = undefined;
    },
  };
}
