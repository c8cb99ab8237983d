import type { Db } from '../../sqlite/index.ts';
import { pathIdentity } from '../../sqlite/index.ts';
import { targetKey } from '../../capture/index.ts';
import { checkConsumers, lostExplanation, lostRepair } from '../target/index.ts';
import { notHeldHealth, type ProjectionHealth } from './health-types.ts';

/*
 * health's side of consumers.ts: a projection a source acknowledges for this
 * target that the target holds no more (and that a sync of the target's set
 * would not build) needs action, as sync says (CONSUMER_NOT_BUILT, exit 3):
 * otherwise a target deleted and made again by a plain sync would read green
 * with less in it than was asked.
 */

/** One entry per lost projection of each readable source (by path), `held` being the names the target holds or its "*" would build. */
export function lostProjections(
  target: Db,
  targetPath: string,
  sources: ReadonlyMap<string, Db>,
  held: ReadonlySet<string>,
): ProjectionHealth[] {
  const at = { targetKey: targetKey(targetPath), targetFile: pathIdentity(targetPath) };
  const out: ProjectionHealth[] = [];
  for (const [sourcePath, source] of sources) {
    let lost;
    try {
      lost = checkConsumers(source, target, 'main', { ...at, sourcePath }, held).lost;
    } catch {
      continue; // a source that cannot be read (its acknowledgements dropped: CAPTURE_DAMAGED) is reported by the projections that read it
    }
    for (const l of lost)
      out.push(
        notHeldHealth({
          name: l.projection,
          kind: l.kind ?? 'unknown',
          state: 'lost',
          reason: 'CONSUMER_NOT_BUILT',
          detail: { consumer: l.consumer, why: l.why, updatedMs: l.updatedMs },
          seq: l.seq,
          sourcePath,
          action: l.message,
          // As health says any code: what was found, then the code and its repair.
          problems: [`${lostExplanation(l, at.targetKey)}; CONSUMER_NOT_BUILT: ${lostRepair(l.projection, sourcePath, at.targetKey)}`],
        }),
      );
  }
  return out;
}
