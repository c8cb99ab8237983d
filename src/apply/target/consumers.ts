import type { Db } from '../../sqlite/index.ts';
import { sameFile, type FileIdentity, repairOf } from '../../sqlite/index.ts';
import { readConsumers, type ConsumerRow } from '../../capture/index.ts';
import { droppedNames } from './dropped.ts';

/*
 * The source knows its consumers: each sync acknowledges each projection it
 * ran as `<projection>@<target's real path>`. A target that was deleted and
 * made again, or a projection removed from it by other means than `sluice
 * drop`, leaves acknowledgements of projections the target no longer holds.
 * A plain sync would rebuild only what the target's set holds (its "*"
 * mirrors) and say nothing: the target would silently hold less than was
 * asked. So sync and health compare the source's acknowledgements for this
 * target with what the target holds and what the run builds, and report
 * each one missing (CONSUMER_NOT_BUILT, exit 3) with both ways out: build it
 * again, or `sluice forget` it. One `sluice drop` removed is forgotten by the
 * next sync instead (dropped.ts).
 */

/** A projection the source acknowledges for this target that the target does not hold and the sync does not build. */
export interface LostProjection {
  /** The acknowledgement row's name (what `sluice forget` takes). */
  readonly consumer: string;
  readonly projection: string;
  /** Its kind, when the acknowledgement recorded it. */
  readonly kind: string | null;
  /** The seq it had reached, and when it was last acknowledged. */
  readonly seq: number;
  readonly updatedMs: number;
  /**
   * `replaced`: the target at this path is another file than the one that
   * acknowledged it (deleted and made again, or replaced); `removed`: the
   * same file, or one sluice cannot tell (an older acknowledgement), no
   * longer holds it.
   */
  readonly why: 'replaced' | 'removed';
  /** What happened and both ways out, with the real files: build it again, or forget it (CONSUMER_NOT_BUILT's repair). */
  readonly message: string;
}

interface ConsumerCheck {
  readonly lost: readonly LostProjection[];
  /** Acknowledgements of projections `sluice drop` removed from the target: to forget. */
  readonly dropped: readonly ConsumerRow[];
  /** Drop records of names the target holds again: to clear. */
  readonly rebuilt: readonly string[];
}

/**
 * Compares the source's acknowledgements for target `targetKey` (its real
 * path) with `held`, the names the target holds or the run builds. The
 * target is read as `schema` on `target` (the source's connection, with the
 * target attached, for sync; the target's own, for health).
 */
export function checkConsumers(
  source: Db,
  target: Db,
  schema: string,
  at: { readonly targetKey: string; readonly targetFile: FileIdentity | undefined; readonly sourcePath: string },
  held: ReadonlySet<string>,
): ConsumerCheck {
  const mine = readConsumers(source).filter((c) => c.target === at.targetKey && c.projection !== null);
  const dropped = droppedNames(target, schema);
  const lost: LostProjection[] = [];
  const forget: ConsumerRow[] = [];
  for (const c of mine) {
    const projection = c.projection as string;
    if (held.has(projection)) continue;
    if (dropped.has(projection)) {
      forget.push(c);
      continue;
    }
    const replaced = c.targetFile !== null && at.targetFile !== undefined && !sameFile(c.targetFile, at.targetFile);
    const why = replaced ? 'replaced' : 'removed';
    lost.push({
      consumer: c.name,
      projection,
      kind: c.kind,
      seq: c.seq,
      updatedMs: c.updatedMs,
      why,
      message: describeLost({ projection, kind: c.kind, seq: c.seq, why }, at.sourcePath, at.targetKey),
    });
  }
  return { lost, dropped: forget, rebuilt: [...dropped].filter((n) => held.has(n)) };
}

/** One line on a lost projection: what happened, and both fixes with the real files. */
function describeLost(l: Pick<LostProjection, 'projection' | 'kind' | 'seq' | 'why'>, sourcePath: string, targetKey: string): string {
  return `${lostExplanation(l, targetKey)}; ${lostRepair(l.projection, sourcePath, targetKey)}`;
}

/** What is lost and why, without the repair (health says the repair after its code). */
export function lostExplanation(l: Pick<LostProjection, 'projection' | 'kind' | 'seq' | 'why'>, targetKey: string): string {
  const what =
    l.why === 'replaced'
      ? `the file at ${targetKey} is not the one that acknowledged it (deleted and made again, or replaced)`
      : 'it was removed from the target without sluice drop';
  const kind = l.kind === null ? '' : ` (${l.kind})`;
  return `the source acknowledges projection ${l.projection}${kind} for this target (at seq ${l.seq}), but the target does not hold it and a sync of its set does not build it: ${what}`;
}

/** The catalog's repair of a lost projection, with the real paths. */
export function lostRepair(projection: string, sourcePath: string, targetKey: string): string {
  return repairOf('CONSUMER_NOT_BUILT', { source: sourcePath, target: targetKey, projection });
}
