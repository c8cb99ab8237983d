import type { Db } from '../../sqlite/index.ts';
import { pathIdentity } from '../../sqlite/index.ts';
import { targetKey } from '../../capture/index.ts';
import type { SourceView } from '../../feed/index.ts';
import { setOfSource } from '../projections/index.ts';
import { checkConsumers, lostExplanation, lostRepair, TARGET_SCHEMA, type ProjectionRecord } from '../target/index.ts';
import type { ProjectionVerification } from './verify-types.ts';

/*
 * Which of a target's projections `sluice verify SRC TGT` answers for, so
 * that none of the source's is left out of an exit 0: those a plain sync of
 * the source runs, by the rule sync runs them by (source-projections.ts: of
 * its capture, of its file, or of no source file recorded; one synced from
 * its file under an earlier capture is stale, SOURCE_CHANGED, until the next
 * sync rebuilds it), and a suspended one (it is not ok whatever its source).
 * A projection of another source file, there now or not, stays out of this
 * verify (health says when its file is gone), as does "*" of one: its
 * mirrors not built yet are that file's. Besides those it holds, the target
 * can lack one the source acknowledges for it (lostOfSource): not ok.
 */

/** The target's projections `sourcePath` (read as main on `db`, as `view`) answers for (see above), and "*" when it is its. */
export function projectionsOfSource(
  db: Db,
  all: readonly ProjectionRecord[],
  view: SourceView,
  sourcePath: string,
): { readonly records: ProjectionRecord[]; readonly mirrorAll: boolean } {
  const own = setOfSource(db, TARGET_SCHEMA, all, { sourceId: view.state.sourceId, path: sourcePath });
  const mine = new Set(own.projections);
  return { records: all.filter((r) => mine.has(r) || r.state === 'suspended'), mirrorAll: own.mirrorAll !== undefined };
}

/**
 * The projections source `db` (main, the target attached) acknowledges for
 * the target at `targetPath` that the target does not hold and a sync of its
 * set does not build, as sync and health find them (CONSUMER_NOT_BUILT,
 * consumers.ts), each not ok with their repair. `held`: the names the target
 * holds or its "*" would build.
 */
export function lostOfSource(
  db: Db,
  paths: { readonly source: string; readonly target: string },
  held: ReadonlySet<string>,
): ProjectionVerification[] {
  const key = targetKey(paths.target);
  const at = { targetKey: key, targetFile: pathIdentity(paths.target), sourcePath: paths.source };
  return checkConsumers(db, db, TARGET_SCHEMA, at, held).lost.map((l) => ({
    name: l.projection,
    ok: false,
    seq: l.seq,
    checked: 0,
    inFlight: 0,
    diffs: [],
    reason: 'CONSUMER_NOT_BUILT',
    skipped: `not compared: ${lostExplanation(l, key)}`,
    repair: lostRepair(l.projection, paths.source, key),
  }));
}
