import { openDatabase, shellWord } from '../sqlite/index.ts';
import { defaultProjectionName, parseDefinition } from '../projection/index.ts';
import type { CaptureMode } from '../capture/index.ts';
import { compileOrError } from '../apply/evolution/index.ts';
import type { NothingToMirrorSay, Unmirrored } from '../apply/projections/index.ts';
import { scalar } from './init-file.ts';
import type { PipelineSource, PipelineTarget } from './pipeline.ts';

/*
 * What plan (plan.ts) says of "*" beyond explain: whether the mirror of a
 * table the pass enables can be built (sync leaves one that cannot out of
 * "*"), what to do in the file about a table whose mirror cannot be
 * (MIRROR_REFUSED, as health --config says it too), and why "*" has
 * nothing to mirror when sync refuses a target for it (NOTHING_TO_SYNC).
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
 * What to do about `table`, which "*" of target `t` (of source
 * `sourcePath`) mirrors and whose mirror cannot be made as the table is
 * (`why`: the refusal, its code and message), so that every sync leaves it
 * out (MIRROR_REFUSED): said in the pipeline file's terms, as plan and
 * health --config say it. Change the table; or declare, instead of "*", a
 * mirror of each of `others` (the other tables "*" mirrors); or stop
 * capturing it: out of "capture", and sluice disable, since sluice run
 * never disables capture (and would enable it again while "capture" lists
 * it).
 */
export function refusedMirrorFix(
  sourcePath: string,
  t: Pick<PipelineTarget, 'path' | 'declaredAt'>,
  table: string,
  why: string,
  others: readonly string[],
): string {
  const mirrors = others.map((o) => `{name: ${scalar(defaultProjectionName(o))}, source: ${scalar(o)}, kind: mirror}`);
  return `table ${table} is captured but its mirror cannot be made ("*" of target ${t.path}, declared at ${t.declaredAt}, mirrors every captured table, and sluice run leaves ${table} out): ${why.replace(/\.$/, '')}. In the pipeline file: change ${table} as that refusal says, and sluice run builds its mirror; or declare the projections of ${t.path} instead of "*" (${mirrors.length === 0 ? 'a projection of each table it needs' : `a mirror of each other table: ${mirrors.join(', ')}`}); or, if nothing the file declares reads ${table}, remove it from "capture" of ${sourcePath} and take capture off it: sluice disable ${shellWord(sourcePath)} ${shellWord(table)} (sluice run never disables capture)`;
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
