import fs from 'node:fs';
import { dropProjection } from '../../apply/target/drop.ts';
import { readProjections } from '../../apply/target/target-meta.ts';
import { readConsumers } from '../../capture/consumers.ts';
import { forget } from '../../feed/acknowledge.ts';
import { openDatabase, type Db } from '../../sqlite/connection.ts';
import { realFilePath } from '../../sqlite/real-path.ts';
import type { PipelineSource, PipelineTarget } from '../pipeline.ts';

/*
 * `prune: true` in a pipeline file: what the file no longer declares is
 * removed, as the user would with `sluice drop` and `sluice forget`.
 * Without it `run` removes nothing (health reports it as undeclared).
 */

/** Whether the target's declaration covers a projection it holds: by name, or as a mirror under "*". */
export function isDeclared(target: PipelineTarget, p: { readonly name: string; readonly kind: string }): boolean {
  const key = p.name.toLowerCase();
  return target.projections.some((e) => (e.kind === 'all' ? p.kind === 'mirror' : e.definitions.some((d) => d.name.toLowerCase() === key)));
}

/** Drops each projection `target` holds that its declaration does not (like `sluice drop`); the names dropped. */
export function dropUndeclared(target: PipelineTarget): string[] {
  if (!fs.existsSync(target.path)) return [];
  const db = openDatabase(target.path, { readonly: true, role: 'target' });
  let held: { name: string; kind: string }[];
  try {
    held = readProjections(db, 'main').map((r) => ({ name: r.name, kind: r.kind }));
  } finally {
    db.close();
  }
  const going = held.filter((p) => !isDeclared(target, p));
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
