/*
 * Crash points for the crash-safety tests: when SLUICE_CRASH_AT names a
 * point, the process kills itself there with SIGKILL (no cleanup, like a
 * power cut). Unset in normal use.
 */
export type CrashPoint = 'before-commit' | 'after-commit' | 'before-ack' | 'build-step';

export function crashPoint(point: CrashPoint): void {
  if (process.env.SLUICE_CRASH_AT === point) process.kill(process.pid, 'SIGKILL');
}
