import { openDatabase, readQuietly } from '../sqlite/index.ts';
import { readConsumers } from '../capture/index.ts';
import type { Pipeline } from './pipeline.ts';

/**
 * Runs `fn` with every file of `pipeline` held (readQuietly: reading them
 * leaves no -wal or -shm behind): its sources, its targets, and the targets
 * its sources acknowledge (the capture's status reads each, declared or not).
 */
export async function readPipelineQuietly<T>(pipeline: Pipeline, fn: () => T | Promise<T>): Promise<T> {
  const sources = pipeline.sources.map((s) => s.path);
  const targets = [...pipeline.sources.flatMap((s) => s.targets.map((t) => t.path)), ...pipeline.subscriptions.map((s) => s.path)];
  return readQuietly([...sources, ...targets], () => readQuietly(acknowledgedTargets(sources), fn));
}

function acknowledgedTargets(sources: readonly string[]): string[] {
  const out: string[] = [];
  for (const file of sources) {
    try {
      const db = openDatabase(file, { readonly: true, role: 'source' });
      try {
        for (const c of readConsumers(db)) if (c.target !== null) out.push(c.target);
      } finally {
        db.close();
      }
    } catch {
      /* a source that cannot be read: plan and health report it */
    }
  }
  return out;
}
