import fs from 'node:fs';
import { SluiceError } from '../../errors.ts';
import { describeHolder, tryProcessLock, type ProcessLock } from '../../sqlite/index.ts';

/*
 * One `sluice run` per pipeline file: two would enable, build and follow
 * the same targets in turn. The lock is a file beside the pipeline file,
 * named after its real path, held as long as the process runs (the
 * operating system frees it however the process ends: process-lock.ts).
 */

export function runLockFile(pipelineFile: string): string {
  let real = pipelineFile;
  try {
    real = fs.realpathSync(pipelineFile);
  } catch {
    /* the pipeline loaded from it: it exists; a race with its removal takes the path as given */
  }
  return `${real}-run`;
}

/** Takes the run lock of `pipelineFile`, or throws RUN_LOCKED naming the process that holds it. */
export function lockRun(pipelineFile: string): ProcessLock {
  const file = runLockFile(pipelineFile);
  const attempt = tryProcessLock(file, 'run');
  if ('taken' in attempt) return attempt.taken;
  const h = attempt.heldBy;
  const who = describeHolder(h, 'sluice ');
  throw new SluiceError(
    'RUN_LOCKED',
    `Pipeline ${pipelineFile} is run by ${who}, which holds its lock ${file}: one sluice run keeps one pipeline file. Stop that process first${h === undefined ? '' : ` (kill ${h.pid})`}, or run another pipeline file.`,
  );
}
