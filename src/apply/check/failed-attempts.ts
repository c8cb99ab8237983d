import { shellWord } from '../../sqlite/index.ts';
import type { ProjectionRecord } from '../target/index.ts';
import { subscribedFeed } from './suspension-repair.ts';
import type { FailureHealth } from './health-types.ts';

/*
 * Health's line for a projection's failed attempts (failure: code, message,
 * time, consecutive), worded by how the projection is fed: a sync's
 * attempts, a subscriber's runs, or imports of files, each with its own
 * command to run again; never a sync for a target that has no source to
 * sync from.
 */

/** Fed by `sluice import` (no source path: an import's row, never synced since). */
function imported(r: ProjectionRecord): Extract<ProjectionRecord['fedBy'], { via: 'import' }> | undefined {
  return r.sourcePath === null && r.fedBy?.via === 'import' ? r.fedBy : undefined;
}

/** The import of `file` into the target again, in words. */
function importAgain(targetPath: string, file: string): string {
  return `run sluice import ${[targetPath, file].map((w) => shellWord(w)).join(' ')} again (with the --projection options it took, if any)`;
}

/** The subscriber of stream `f` run again, in words. */
function subscribeAgain(targetPath: string, f: Extract<ProjectionRecord['fedBy'], { via: 'subscribe' }>): string {
  return `run sluice subscribe ${[targetPath, '--nats', f.url, '--stream', f.stream, '--source', f.sourceId].map((w) => shellWord(w)).join(' ')} again (with the --projection and login options it took, if any)`;
}

/**
 * Who runs a projection's sync again (after a failed or interrupted first
 * build, or failed attempts), in words: sluice run, which retries a target
 * it follows by itself; for a projection sluice subscribe feeds (no source
 * path, so sync has nothing to sync it from), subscribe, with the broker,
 * stream and source the target records; for one sluice import feeds, the
 * import of its file. Undefined: run sluice sync again.
 */
export function runAgain(r: ProjectionRecord, targetPath: string, followedByRun: boolean): string | undefined {
  if (followedByRun) return 'sluice run tries it again by itself (with backoff), and goes on once the cause is gone';
  // Imported (no source path either): the import, with its file.
  const file = imported(r);
  if (file !== undefined) return importAgain(targetPath, file.file);
  const f = subscribedFeed(r);
  return f === undefined ? undefined : subscribeAgain(targetPath, f);
}

/**
 * The problem health reports for projection `r`'s failed attempts, by how
 * it is fed (`followedByRun`: HealthOptions', sluice run retries them).
 */
export function failedAttempts(r: ProjectionRecord, failure: FailureHealth, targetPath: string, followedByRun: boolean): string {
  const when = failure.ms === null ? '' : ` (last at ${new Date(failure.ms).toISOString()})`;
  const n = failure.consecutive;
  const what = `${failure.code}: ${failure.message}`;
  const file = followedByRun ? undefined : imported(r);
  if (file !== undefined)
    return `the last ${n === 1 ? 'import' : `${n} consecutive imports`} into it failed${when}: ${what}; fix the cause and ${importAgain(targetPath, file.file)}`;
  const sub = followedByRun ? undefined : subscribedFeed(r);
  if (sub !== undefined)
    return `the last ${n === 1 ? 'subscribe run' : `${n} consecutive subscribe runs`} failed${when}: ${what}; fix the cause and ${subscribeAgain(targetPath, sub)}`;
  return `the last ${n} consecutive sync attempt${n === 1 ? '' : 's'} failed${when}: ${what}; fix the cause and ${runAgain(r, targetPath, followedByRun) ?? 'run sluice sync again'}`;
}
