import { enable } from '../../capture/enable.ts';
import { readTables } from '../../capture/catalog.ts';
import { openSource } from '../../capture/open-source.ts';
import type { PipelineSource } from '../pipeline.ts';
import type { PartKind } from './part.ts';
import { forgetUndeclared } from './prune.ts';

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
 * the file no longer declares are forgotten. Once done, the part waits to
 * be stopped: a reload that changes the list restarts it.
 */
export const capturePart: PartKind<CaptureConfig> = {
  kind: 'capture',
  first: true,
  configs: (pipeline) => pipeline.sources.map((source) => ({ source, prune: pipeline.prune })),
  name: (c) => c.source.path,
  fingerprint: (c) =>
    JSON.stringify([c.source.capture.map((t) => [t.table, t.mode]), c.prune, c.prune ? c.source.targets.map((t) => t.path) : []]),
  async run({ source, prune }, ctx) {
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
    ctx.ok();
    await new Promise<void>((resolve) => {
      if (ctx.signal.aborted) resolve();
      else ctx.signal.addEventListener('abort', () => resolve(), { once: true });
    });
  },
};
