import fs from 'node:fs';
import type { Db } from '../../sqlite/index.ts';
import { fileKey, pathIdentity } from '../../sqlite/index.ts';
import { targetKey } from '../../capture/index.ts';
import type { SourceView } from '../../feed/index.ts';
import { isDefaultMirror, readProjectionSet } from '../projections/index.ts';
import { checkConsumers, lostExplanation, lostRepair, TARGET_SCHEMA, type ProjectionRecord } from '../target/index.ts';
import type { ProjectionVerification } from './verify-types.ts';

/*
 * Which of a target's projections `sluice verify SRC TGT` answers for: those
 * the source's business, so that none of them is left out of an exit 0.
 *
 * - Those of its capture (the stored source id is the source's).
 * - Those synced from its file under an earlier capture of it (capture
 *   enabled again since): their cursor does not continue (SOURCE_CHANGED),
 *   stale until the next sync rebuilds them.
 * - The mirrors the target's "*" makes of a table this source captures,
 *   whatever capture or path they were synced from, unless that path is
 *   another source file that is still there: a plain sync of this source runs
 *   them (and rebuilds one of another capture, SOURCE_CHANGED), and "*"
 *   counts their names as held, so they are not listed as unbuilt either. A
 *   source file moved and its capture enabled again leaves such a mirror:
 *   neither the capture nor the path is the source's any more.
 * - A suspended one (it is not ok whatever its source).
 *
 * A projection of another source file still there stays out of this verify.
 * Besides those it holds, the target can lack one the source acknowledges for
 * it (lostOfSource): not ok.
 */

/** The target's projections `sourcePath` (read as main on `db`, as `view`) answers for: see above. */
export function projectionsOfSource(db: Db, all: readonly ProjectionRecord[], view: SourceView, sourcePath: string): ProjectionRecord[] {
  const file = fileKey(sourcePath);
  const mirrorAll = readProjectionSet(db, TARGET_SCHEMA, all).mirrorAll;
  const captured = new Set([...view.tables.values()].map((a) => a.table.name));
  const ofFile = (p: string | null) => p !== null && fileKey(p) === file;
  // Another source file, still there: its projections are its own.
  const another = (p: string | null) => p !== null && !ofFile(p) && fs.existsSync(p);
  return all.filter(
    (r) =>
      r.sourceId === view.state.sourceId ||
      r.state === 'suspended' ||
      ofFile(r.sourcePath) ||
      (mirrorAll !== undefined && isDefaultMirror(r) && captured.has(r.sourceTable) && !another(r.sourcePath ?? mirrorAll.sourcePath)),
  );
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
