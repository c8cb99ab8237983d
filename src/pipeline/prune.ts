import fs from 'node:fs';
import { dropMirrorAll, dropProjection } from '../apply/projections/index.ts';
import { targetFollowed } from '../apply/sync/index.ts';
import { readConsumers, targetKey, type ConsumerRow, readTables } from '../capture/index.ts';
import { forget } from '../feed/index.ts';
import { defaultProjectionName } from '../projection/index.ts';
import type { Db } from '../sqlite/index.ts';
import type { Pipeline, PipelineSource, PipelineTarget } from './pipeline.ts';
import { declaredInputs, declaresHeld } from './declared.ts';
import { heldProjections, holdsMirrorAll } from './held.ts';

/*
 * `prune: true` in a pipeline file: what the file no longer declares is
 * removed, as the user would with `sluice drop` and `sluice forget`.
 * Without it `run` removes nothing (health reports it as undeclared).
 * convergeOnce and `run` remove through these same functions, and plan
 * predicts them (test/pipeline/prune-rule.test.ts holds the three together).
 */

/**
 * Drops each projection `target` holds that its declaration does not (like
 * `sluice drop`), and takes "*" out of its stored set when the declaration
 * no longer lists it (else "*" would go on asking for the mirror of each
 * table captured later, which nothing declares); the names dropped ("*" among them).
 */
export function dropUndeclared(target: PipelineTarget): string[] {
  if (!fs.existsSync(target.path)) return [];
  const held = heldProjections(target.path);
  const going = held.filter((p) => !declaresHeld(target.projections, p));
  for (const p of going) dropProjection(target.path, p.name);
  const all = undeclaredMirrorAll(target) && dropMirrorAll(target.path);
  return [...going.map((p) => p.name), ...(all ? ['"*"'] : [])];
}

/**
 * The one rule of "*" a target stores that the file does not declare:
 * whether `target` holds "*" in its projection set while its declaration
 * does not list it (a plain sync of it would mirror every table captured
 * later, which nothing declares). What dropUndeclared takes out (prune:
 * true), what plan lists (dropped, or undeclared without prune) and what
 * health --config flags, whether or not a table is captured now that "*"
 * would mirror.
 */
export function undeclaredMirrorAll(target: Pick<PipelineTarget, 'path' | 'projections'>): boolean {
  return fs.existsSync(target.path) && !declaredInputs(target.projections).includes('*') && holdsMirrorAll(target.path);
}

/** What removes "*" that `target` stores and the file does not declare (undeclaredMirrorAll), as plan and health --config say it. */
export function undeclaredMirrorAllFix(target: string): string {
  return `declare "*", or set prune: true and sluice run takes "*" out of the projection set of ${target}`;
}

/** The projections a declared target keeps acknowledgements for; 'all' when that cannot be known now (the target cannot be read). */
export type KeptProjections = ReadonlySet<string> | 'all';

/**
 * What a declared target keeps by its declaration: each definition it
 * names, each projection it holds that the declaration covers (declaresHeld:
 * under "*", the mirrors "*" made), and under "*" the mirror of each table
 * the source captures in images mode or declares so (built by the next
 * pass when not held yet). A target that exists and cannot be read keeps every
 * acknowledgement: forgetting one would let the source prune what the
 * target may still need.
 */
export function keptByDeclaration(target: PipelineTarget, source: PipelineSource, capturedImages: readonly string[]): KeptProjections {
  const declared = declaredInputs(target.projections);
  const kept = new Set(declared.flatMap((d) => (d === '*' ? [] : [d.name])));
  const images = [...capturedImages, ...source.capture.filter((c) => c.mode === 'images').map((c) => c.table)];
  if (declared.includes('*')) for (const t of images) kept.add(defaultProjectionName(t));
  if (!fs.existsSync(target.path)) return kept;
  try {
    for (const p of heldProjections(target.path)) if (declaresHeld(target.projections, p)) kept.add(p.name);
  } catch {
    return 'all';
  }
  return kept;
}

/**
 * The one rule of which acknowledgement rows on a source the file no longer
 * declares: a sync's (`<projection>@<target>`; another consumer, a
 * publisher's or a reader's, is never judged) whose target the source does
 * not declare, or whose projection its declared target does not keep
 * (`kept`). health --config reports them, plan predicts them, and with
 * `prune: true` convergeOnce and run forget them (forgetUndeclared).
 *
 * A target the file does not declare that another process follows now
 * (`followed`, followedByAnother: its follower lock is held, by another
 * pipeline's run or a sync --follow) is that process's: its
 * acknowledgements are never judged by this file. Forgetting them let the
 * source prune the journal under a live follower, which then had to
 * rebuild its target.
 */
export function undeclaredAcknowledgements<C extends Pick<ConsumerRow, 'name' | 'projection' | 'target'>>(
  consumers: readonly C[],
  source: PipelineSource,
  kept: (target: PipelineTarget) => KeptProjections,
  followed: (target: string) => boolean,
): C[] {
  const declared = new Map(source.targets.map((t) => [targetKey(t.path), t]));
  const memo = new Map<PipelineTarget, KeptProjections>();
  const others = new Map<string, boolean>();
  return consumers.filter((c) => {
    if (c.target === null || c.projection === null) return false;
    const t = declared.get(c.target);
    if (t === undefined) {
      const f = others.get(c.target) ?? followed(c.target);
      others.set(c.target, f);
      return !f;
    }
    const k = memo.get(t) ?? kept(t);
    memo.set(t, k);
    return k !== 'all' && !k.has(c.projection);
  });
}

/**
 * `followed` for the rule above, for `pipeline`'s file: whether another
 * process follows `target` now. A target the file declares (under another
 * source: moved there, or subscribed) is followed by this file's own run,
 * never another process's: its acknowledgements on a source that no longer
 * declares it are this file's to judge (kept, they would hold that
 * source's journal for ever).
 */
export function followedByAnother(pipeline: Pick<Pipeline, 'sources' | 'subscriptions'>): (target: string) => boolean {
  const own = new Set(
    [...pipeline.sources.flatMap((s) => s.targets.map((t) => t.path)), ...pipeline.subscriptions.map((s) => s.path)].map(targetKey),
  );
  return (target) => !own.has(target) && followedNow(target);
}

/** Whether a process holds the follower lock of `target` now, through this name or another name of its file (a hard link beside it) (looked at without taking it for more than a moment, nothing written); one that cannot be read counts as followed (forgetting could let the source prune what its follower needs). */
function followedNow(target: string): boolean {
  try {
    return targetFollowed(target);
  } catch {
    return true;
  }
}

/**
 * Forgets the acknowledgement rows on the source that `source` no longer
 * declares (undeclaredAcknowledgements; like `sluice forget`); the names
 * forgotten. `followed` as followedByAnother says it for the file; `kept`
 * defaults to each target's declaration as read from it now
 * (keptByDeclaration).
 */
export function forgetUndeclared(
  db: Db,
  source: PipelineSource,
  followed: (target: string) => boolean,
  kept?: (target: PipelineTarget) => KeptProjections,
): string[] {
  const images = () =>
    readTables(db)
      .filter((t) => t.mode === 'images')
      .map((t) => t.name);
  const going = undeclaredAcknowledgements(readConsumers(db), source, kept ?? ((t) => keptByDeclaration(t, source, images())), followed);
  for (const c of going) forget(db, c.name);
  return going.map((c) => c.name);
}
