import fs from 'node:fs';
import { SluiceError } from '../errors.ts';
import { openDatabase } from '../sqlite/index.ts';
import { status, type CaptureMode } from '../capture/index.ts';
import { Syncer } from '../apply/sync/index.ts';
import type { SyncReport } from '../apply/sync/index.ts';
import { dropUndeclared, followedByAnother, forgetUndeclared } from './prune.ts';
import { checkDeclaredExclusions, declaredInputs, makeTargetFolder, undeclaredCapture } from './declared.ts';
import { enableDeclared } from './enable-declared.ts';
import { declaredNothingToMirror } from './plan-mirror-all.ts';
import type { Pipeline, PipelineSource } from './pipeline.ts';

/*
 * One pass of what `sluice run` keeps doing: bring what exists to what the
 * file declares. In order: enable the declared capture that is not there
 * yet (or is in another mode); sync each declared target with its declared
 * projections (a missing target is built with all of them); then, only
 * with `prune: true`, drop the projections a target holds that the file
 * does not declare and forget the acknowledgements of targets and
 * projections it no longer declares. Capture is never disabled. A target
 * whose sync fails is recorded and the others go on. No process concerns
 * here (signals, retries, HTTP): the caller owns those. planPipeline
 * (plan.ts) predicts this pass, and a test holds the two together.
 */

export interface ConvergedSource {
  readonly path: string;
  /** What this pass enabled (or switched to another mode). */
  readonly enabled: readonly { readonly table: string; readonly mode: CaptureMode }[];
  /** Captured tables the file does not declare (left captured). */
  readonly undeclaredCapture: readonly string[];
  /** Acknowledgements forgotten (prune: true only). */
  readonly forgotten: readonly string[];
  /** Why enabling failed, if it did, or why a declared table stays unarmed (new columns the file does not name: SCHEMA_CHANGED); the targets are synced anyway. */
  readonly error: { readonly code: string; readonly message: string } | null;
}

export interface ConvergedTarget {
  readonly path: string;
  readonly source: string;
  /** Whether this pass made the target file. */
  readonly created: boolean;
  /** The sync's report; null when it failed as a whole (`error`). */
  readonly sync: SyncReport | null;
  readonly error: { readonly code: string; readonly message: string } | null;
  /** Projections dropped because the file does not declare them (prune: true only). */
  readonly dropped: readonly string[];
}

export interface ConvergeReport {
  readonly sources: readonly ConvergedSource[];
  readonly targets: readonly ConvergedTarget[];
}

export interface ConvergeOptions {
  /** Stops each sync between two target transactions (RunOptions.signal). */
  readonly signal?: AbortSignal;
}

function errorOf(err: unknown): { code: string; message: string } {
  if (err instanceof SluiceError) return { code: err.code, message: err.message };
  return { code: 'APPLY_FAILED', message: err instanceof Error ? err.message : String(err) };
}

/**
 * Runs one pass: enable, sync every declared target, and (prune: true)
 * drop and forget what is no longer declared.
 *
 * @example
 * const r = await convergeOnce(await loadPipeline('sluice.yml'));
 * for (const t of r.targets) if (t.error !== null) console.error(t.path, t.error.code);
 */
export async function convergeOnce(pipeline: Pipeline, options: ConvergeOptions = {}): Promise<ConvergeReport> {
  const sources: ConvergedSource[] = [];
  const targets: ConvergedTarget[] = [];
  for (const source of pipeline.sources) {
    const captured = enableSource(source);
    const synced: ConvergedTarget[] = [];
    for (const t of source.targets) {
      const created = !fs.existsSync(t.path);
      let sync: SyncReport | null = null;
      let error: ConvergedTarget['error'] = null;
      try {
        checkDeclaredExclusions(source);
        makeTargetFolder(t.path);
        const syncer = await Syncer.open(source.path, t.path, {
          projections: declaredInputs(t.projections),
          nothingToMirror: declaredNothingToMirror(source, t),
        });
        try {
          sync = await syncer.runOnce(options.signal === undefined ? {} : { signal: options.signal });
        } finally {
          syncer.close();
        }
      } catch (err) {
        error = errorOf(err);
      }
      synced.push({ path: t.path, source: source.path, created: created && fs.existsSync(t.path), sync, error, dropped: [] });
    }
    const pruned = pipeline.prune ? prune(source, synced, followedByAnother(pipeline)) : { targets: synced, forgotten: [] };
    targets.push(...pruned.targets);
    sources.push({ ...captured, forgotten: pruned.forgotten });
  }
  return { sources, targets };
}

function enableSource(source: PipelineSource): Omit<ConvergedSource, 'forgotten'> {
  const db = openDatabase(source.path, { role: 'source' });
  try {
    let enabled: ConvergedSource['enabled'] = [];
    let error: ConvergedSource['error'] = null;
    try {
      // Table by table where enable refuses a call (enableDeclared): one refused table keeps no other from capture.
      const done = enableDeclared(db, source, status(db));
      enabled = done.enabled.flatMap((e) => e.tables.map((table) => ({ table, mode: e.call.mode })));
      const first = done.refused[0];
      const held = done.held[0];
      if (first !== undefined) error = errorOf(first.error);
      else if (held !== undefined) error = { code: 'SCHEMA_CHANGED', message: held.fix };
    } catch (err) {
      error = errorOf(err);
    }
    const undeclared = undeclaredCapture(source, status(db));
    return { path: source.path, enabled, undeclaredCapture: undeclared, error };
  } finally {
    db.close();
  }
}

/** prune: true: drops what each synced target holds beyond what its declaration covers, then forgets the acknowledgements the file no longer declares (the rule run applies: prune.ts). */
function prune(
  source: PipelineSource,
  synced: readonly ConvergedTarget[],
  followed: (target: string) => boolean,
): { targets: ConvergedTarget[]; forgotten: string[] } {
  const targets = synced.map((t) => {
    if (t.sync === null || !fs.existsSync(t.path)) return t;
    const declared = source.targets.find((x) => x.path === t.path);
    return declared === undefined ? t : { ...t, dropped: dropUndeclared(declared) };
  });
  const db = openDatabase(source.path, { role: 'source' });
  try {
    return { targets, forgotten: forgetUndeclared(db, source, followed) };
  } finally {
    db.close();
  }
}
