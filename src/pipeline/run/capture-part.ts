import { enable, readTables, openSource } from '../../capture/index.ts';
import type { PipelineSource } from '../index.ts';
import type { PartContext, PartKind } from './part.ts';
import { forgetUndeclared } from '../index.ts';

export interface CaptureConfig {
  readonly source: PipelineSource;
  /** The file's `prune`: forget the acknowledgements of targets it no longer declares. */
  readonly prune: boolean;
}

/*
 * A source's capture: the tables the file declares are captured in the
 * declared mode. Only what is missing is enabled (a table not captured, or
 * captured in another mode); nothing is ever disabled (`sluice disable` is
 * the user's to run). With `prune: true`, the acknowledgements of targets
 * the file no longer declares are forgotten. Once done, the part looks
 * again every few seconds (a source made again is captured again; one
 * that is gone fails the part, retried with backoff) until it is stopped:
 * a reload that changes the list restarts it.
 */
export const capturePart: PartKind<CaptureConfig> = {
  kind: 'capture',
  first: true,
  configs: (pipeline) => pipeline.sources.map((source) => ({ source, prune: pipeline.prune })),
  name: (c) => c.source.path,
  fingerprint: (c) =>
    JSON.stringify([c.source.capture.map((t) => [t.table, t.mode]), c.prune, c.prune ? c.source.targets.map((t) => t.path) : []]),
  async run(config, ctx) {
    ensureCaptured(config, ctx);
    ctx.ok();
    // Looked at again now and then: a source deleted and made again (a reset, a restore without sluice's tables) is captured again as at start.
    while (!(await aborted(ctx.signal, RECHECK_MS))) ensureCaptured(config, ctx);
  },
};

/** How often a running capture part looks whether its declared tables are still captured (one open and one catalog read). */
const RECHECK_MS = 3000;

/** Enables the declared tables that are not captured in their declared mode; with prune, forgets undeclared targets' acknowledgements. */
function ensureCaptured({ source, prune }: CaptureConfig, ctx: PartContext): void {
  const db = openSource(source.path);
  try {
    const captured = new Map(readTables(db).map((t) => [t.name.toLowerCase(), t.mode]));
    for (const mode of ['images', 'keys'] as const) {
      const missing = source.capture.filter((c) => c.mode === mode && captured.get(c.table.toLowerCase()) !== mode).map((c) => c.table);
      if (missing.length === 0) continue;
      const r = enable(db, missing, { mode });
      ctx.log('info', 'enabled', `captured ${missing.join(', ')} (${mode} mode)`, { tables: missing, mode, sourceId: r.sourceId });
    }
    if (prune) {
      const forgotten = forgetUndeclared(db, source);
      if (forgotten.length > 0)
        ctx.log('info', 'forgot', `forgot the acknowledgements of targets no longer declared (prune: true): ${forgotten.join(', ')}`, {
          consumers: forgotten,
        });
    }
  } finally {
    db.close();
  }
}

/** Waits `ms`; true when `signal` aborted first (or already had). */
function aborted(signal: AbortSignal, ms: number): Promise<boolean> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve(true);
    const done = (v: boolean) => {
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      resolve(v);
    };
    const onAbort = () => done(true);
    const timer = setTimeout(() => done(false), ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
