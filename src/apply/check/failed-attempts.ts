import { shellCommand, shellWord } from '../../sqlite/index.ts';
import { currentCode, reasonsOf } from '../../reasons.ts';
import type { ProjectionRecord } from '../target/index.ts';
import { subscribedFeed } from './suspension-repair.ts';
import type { FailureHealth } from './health-types.ts';

/*
 * Health's line for a projection's failed attempts (failure: code, message,
 * time, consecutive), worded by how the projection is fed: a sync's
 * attempts, a subscriber's runs, or imports of files. An imported
 * projection's failure is often a file import refused (import-refusal.ts in
 * export/: events missing before it, another history, another source, a
 * changed definition and no snapshot), whose repair is another file, never
 * a sync: the target has no source to sync from.
 */

/** Why a cursor cannot be continued: a file that does not continue the target's history (HISTORY_DIVERGED, FILE_CHANGED, ...). */
const NOT_CONTINUED: ReadonlySet<string> = reasonsOf('rebuild');

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
    return `the last ${n === 1 ? 'import' : `${n} consecutive imports`} into it failed${when}: ${what}; ${importRepair(r, failure.code, targetPath, importAgain(targetPath, file.file))}`;
  const sub = followedByRun ? undefined : subscribedFeed(r);
  if (sub !== undefined)
    return `the last ${n === 1 ? 'subscribe run' : `${n} consecutive subscribe runs`} failed${when}: ${what}; fix the cause and ${subscribeAgain(targetPath, sub)}`;
  return `the last ${n} consecutive sync attempt${n === 1 ? '' : 's'} failed${when}: ${what}; fix the cause and ${runAgain(r, targetPath, followedByRun) ?? 'run sluice sync again'}`;
}

/** What repairs an imported projection's failed import of code `code`: another file for a refused one, else the import again. */
function importRepair(r: ProjectionRecord, code: string, targetPath: string, again: string): string {
  const name = r.name;
  const snapshot = `export a new file on the source (sluice export SOURCE --out NEW_FILE starts with a snapshot) and import it: sluice import ${shellWord(targetPath)} NEW_FILE`;
  const current = currentCode(code);
  if (current === 'BATCH_GAP')
    return `events between ${name}'s cursor and the file are missing: import the export file that holds them first (an earlier file of the same export), then the refused file again; or rebuild ${name} from a snapshot: ${snapshot}`;
  if (current === 'SOURCE_CHANGED')
    return `the file is of another source than the one ${name} follows: import that source's files here, and this file into a new target; or, for ${name} to follow the file's source, remove it and its tables (${shellCommand('drop', { target: targetPath, projection: name })}) and import a file of that source that starts with a snapshot`;
  if (current === 'IMPORT_NO_SNAPSHOT')
    return `${name} can only be rebuilt from a snapshot, which the file does not hold: ${snapshot} (with the --projection options that changed it, if any); or, for a changed definition, import the file with the definition ${name} was built with (the target's own, used when no --projection is given)`;
  if (NOT_CONTINUED.has(current))
    return `the file does not continue the history ${name} holds, so only a snapshot can rebuild it: ${snapshot}`;
  return `fix the cause and ${again}`;
}
