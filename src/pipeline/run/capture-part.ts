import { enable } from '../../capture/enable.ts';
import { readTables } from '../../capture/catalog.ts';
import { openSource } from '../../capture/open-source.ts';
import type { PipelineSource } from '../pipeline.ts';
import type { PartKind } from './part.ts';

/*
 * A source's capture: the tables the file declares are captured in the
 * declared mode. Only what is missing is enabled (a table not captured, or
 * captured in another mode); nothing is ever disabled (`sluice disable` is
 * the user's to run). Once done, the part waits to be stopped: a reload
 * that changes the list restarts it.
 */
export const capturePart: PartKind<PipelineSource> = {
  kind: 'capture',
  first: true,
  configs: (pipeline) => pipeline.sources,
  name: (s) => s.path,
  fingerprint: (s) => JSON.stringify(s.capture.map((c) => [c.table, c.mode])),
  async run(source, ctx) {
    const db = openSource(source.path);
    try {
      const captured = new Map(readTables(db).map((t) => [t.name.toLowerCase(), t.mode]));
      for (const mode of ['images', 'keys'] as const) {
        const missing = source.capture.filter((c) => c.mode === mode && captured.get(c.table.toLowerCase()) !== mode).map((c) => c.table);
        if (missing.length === 0) continue;
        const r = enable(db, missing, { mode });
        ctx.log('info', 'enabled', `captured ${missing.join(', ')} (${mode} mode)`, { tables: missing, mode, sourceId: r.sourceId });
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
