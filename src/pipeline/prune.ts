import fs from 'node:fs';
import { dropProjection } from '../apply/projections/index.ts';
import { readConsumers } from '../capture/index.ts';
import { forget } from '../feed/index.ts';
import type { Db } from '../sqlite/index.ts';
import { realFilePath } from '../sqlite/index.ts';
import type { PipelineSource, PipelineTarget } from './pipeline.ts';
import { declaresHeld } from './declared.ts';
import { heldProjections } from './held.ts';

/*
 * `prune: true` in a pipeline file: what the file no longer declares is
 * removed, as the user would with `sluice drop` and `sluice forget`.
 * Without it `run` removes nothing (health reports it as undeclared).
 */

/** Drops each projection `target` holds that its declaration does not (like `sluice drop`); the names dropped. */
export function dropUndeclared(target: PipelineTarget): string[] {
  if (!fs.existsSync(target.path)) return [];
  const held = heldProjections(target.path);
  const going = held.filter((p) => !declaresHeld(target.projections, p));
  for (const p of going) dropProjection(target.path, p.name);
  return going.map((p) => p.name);
}

/** Forgets the acknowledgement rows on the source of sync targets `source` no longer declares (like `sluice forget`); the names forgotten. */
export function forgetUndeclared(db: Db, source: PipelineSource): string[] {
  const declared = new Set(source.targets.map((t) => realFilePath(t.path)));
  const going = readConsumers(db).filter((c) => c.target !== null && !declared.has(c.target));
  for (const c of going) forget(db, c.name);
  return going.map((c) => c.name);
}
