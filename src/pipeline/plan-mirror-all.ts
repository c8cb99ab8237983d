import { openDatabase } from '../sqlite/index.ts';
import { defaultProjectionName, parseDefinition } from '../projection/index.ts';
import type { CaptureMode } from '../capture/index.ts';
import { compileOrError } from '../apply/evolution/index.ts';
import type { NothingToMirrorSay, Unmirrored } from '../apply/projections/index.ts';
import type { PipelineSource, PipelineTarget } from './pipeline.ts';

/*
 * What plan (plan.ts) says of "*" beyond explain: whether the mirror of a
 * table the pass enables can be built (sync leaves one that cannot out of
 * "*"), and why "*" has nothing to mirror when sync refuses a target for it
 * (NOTHING_TO_SYNC).
 */

/** Each of `tables` (not captured yet) with why its mirror cannot be built against the source, or undefined when it can. */
export function mirrorErrors(source: string, tables: readonly string[]): [string, { code: string; message: string } | undefined][] {
  if (tables.length === 0) return [];
  const db = openDatabase(source, { readonly: true, role: 'source' });
  try {
    return tables.map((table) => {
      const p = compileOrError(db, parseDefinition({ name: defaultProjectionName(table), source: table, kind: 'mirror' }));
      return [table, 'error' in p ? p.error : undefined];
    });
  } finally {
    db.close();
  }
}

/**
 * Why "*" of target `t` mirrors nothing, and the fix in the file's terms
 * (sync's own message names `sluice enable --mode images`, which a pass
 * would switch back to the declared mode): each table is in keys or counter
 * mode (`after`: the modes once the pass has enabled what it enables), or
 * its mirror cannot be built (`unmirrored`).
 */
export function nothingToMirrorFix(
  source: PipelineSource,
  t: PipelineTarget,
  after: readonly { readonly table: string; readonly mode: CaptureMode }[],
  unmirrored: readonly Unmirrored[],
): string {
  const others = after.filter((x) => x.mode !== 'images').map((x) => `${x.table} (${x.mode})`);
  const why = [
    ...(others.length === 0 ? [] : [`${others.join(', ')} ${others.length === 1 ? 'is' : 'are'} captured in a mode that feeds no mirror`]),
    ...unmirrored.map((u) => `the mirror of ${u.table} cannot be built: ${u.why.replace(/\.$/, '')}`),
  ];
  return `"*" of target ${t.path} (declared at ${t.declaredAt}) mirrors no table of source ${source.path}, so sync has nothing to build and refuses the target (sluice run retries it): ${why.length === 0 ? 'the source captures no table' : why.join('; ')}. Declare a table in images mode in "capture" (changing a mode re-arms it), declare a projection instead of "*", or remove the target`;
}

/**
 * sync's NOTHING_TO_SYNC for target `t` in the file's terms, by the rule plan
 * says it with (nothingToMirrorFix): what run's targets and a converging
 * pass give Syncer.open (SyncOptions.nothingToMirror), so that run's log and
 * /healthz do not send the user to `sluice enable --mode images`, which the
 * capture part would switch back to the declared mode.
 */
export function declaredNothingToMirror(source: PipelineSource, t: PipelineTarget): NothingToMirrorSay {
  return (captured, unmirrored) =>
    `${nothingToMirrorFix(
      source,
      t,
      captured.map((c) => ({ table: c.name, mode: c.mode })),
      unmirrored,
    )}.`;
}
