import type { Db } from '../sqlite/index.ts';
import { FailClosedError, type InvalidInputError } from '../errors.ts';
import { enableHint } from './enable-hint.ts';
import { RUN_ON_SOURCE, targetNotSource } from './target-guard.ts';
import type { CaptureVerification } from './arming.ts';

/**
 * The error for a source whose capture cannot be read (verifyCapture's
 * problem): CAPTURE_ABSENT with the enable command, or
 * CAPTURE_FORMAT_UNKNOWN. Every reader says it the same way, before it
 * writes anything (a sync makes no target for such a source). A sync
 * target given for the source is TARGET_NOT_SOURCE naming the file it is
 * synced from: the enable CAPTURE_ABSENT names would be refused.
 */
export function unreadableCapture(db: Db, problem: NonNullable<CaptureVerification['problem']>): FailClosedError | InvalidInputError {
  const target = problem === 'CAPTURE_ABSENT' ? targetNotSource(db, db.name, RUN_ON_SOURCE) : undefined;
  if (target !== undefined) return target;
  const code = problem === 'FORMAT_UNKNOWN' ? 'CAPTURE_FORMAT_UNKNOWN' : 'CAPTURE_ABSENT';
  return new FailClosedError(
    code,
    code === 'CAPTURE_ABSENT'
      ? `Source ${db.name} has no sluice capture. ${capitalized(enableHint(db))}, first.`
      : `Source ${db.name} has a capture format this sluice does not know. Upgrade sluice, or disable and enable again.`,
    { source: db.name },
  );
}

/** A hint as the start of a sentence: "sluice enable ..." is a command and is kept as typed; a hint in words starts with a capital. */
function capitalized(hint: string): string {
  return hint.startsWith('sluice ') ? `Run ${hint}` : hint.charAt(0).toUpperCase() + hint.slice(1);
}
