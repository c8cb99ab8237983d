import { lockHeld } from '../../sqlite/index.ts';
import type { RunPart, RunStatus } from '../index.ts';
import { runLockFile } from './run-lock.ts';

/*
 * What a `sluice run` process knows that its files do not say: the pipeline
 * file no longer loading (it keeps the configuration loaded before), a
 * target in its build, a part not running or failing, a pass stalled. One
 * wording for /healthz (runner.ts) and for `health --config`, which asks
 * the run that holds the file (src/cli/ask-run.ts).
 */

/** The pipeline file `file` no longer loads in the run: what it keeps running meanwhile. */
export function configProblems(file: string, configError: RunStatus['run']['configError']): string[] {
  return configError === null ? [] : [`${file}: ${configError.message} (the configuration loaded before keeps running)`];
}

/** What the run's parts say needs action: each target building, then each part failing, not running, or stalled. */
export function partProblems(parts: readonly RunPart[], now = Date.now()): string[] {
  const building = parts.filter((p) => p.kind === 'target' && p.phase === 'building').map((p) => `${p.name}: building from a snapshot`);
  return [
    ...building,
    ...parts.flatMap((p) =>
      p.failure !== null
        ? [`${p.kind} ${p.name}: ${p.failure.code}: ${p.failure.message}`]
        : p.state !== 'running'
          ? [`${p.kind} ${p.name}: ${p.state}`]
          : p.stalled !== undefined
            ? [stalledProblem(p.name, p.stalled, now)]
            : [],
    ),
  ];
}

/** A following target whose pass has committed nothing for longer than its bound: what is wrong and what to do. */
function stalledProblem(target: string, s: NonNullable<RunPart['stalled']>, now: number): string {
  const secs = Math.round((now - s.sinceMs) / 1000);
  return `target ${target}: stalled: its pass has committed nothing for ${secs} s (past ${s.boundMs} ms, health: maxPassMs), so its projections fall behind the source: a custom handler's apply that awaits what never settles, or loops, holds it; fix the handler (sluice run loads it again when it is saved), or restart sluice run`;
}

/**
 * The `sluice run` that holds the lock of pipeline file `file` now, if one
 * does (looked at for a moment, nothing written: lockHeld): its pid and host
 * as it recorded them (undefined when it has not yet). A lock file that
 * cannot be read counts as not held.
 */
export function runHolding(file: string): { readonly pid: number | undefined; readonly host: string | undefined } | undefined {
  let held;
  try {
    held = lockHeld(runLockFile(file));
  } catch {
    return undefined;
  }
  return held === undefined ? undefined : { pid: held.heldBy?.pid, host: held.heldBy?.host };
}
