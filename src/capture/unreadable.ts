import type { Db } from '../sqlite/index.ts';
import { FailClosedError } from '../errors.ts';
import { enableHint } from './enable-hint.ts';
import type { CaptureVerification } from './arming.ts';

/**
 * The error for a source whose capture cannot be read (verifyCapture's
 * problem): CAPTURE_ABSENT with the enable command, or
 * CAPTURE_FORMAT_UNKNOWN. Every reader says it the same way, before it
 * writes anything (a sync makes no target for such a source).
 */
export function unreadableCapture(db: Db, problem: NonNullable<CaptureVerification['problem']>): FailClosedError {
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
