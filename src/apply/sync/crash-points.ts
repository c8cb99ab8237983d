/*
 * Crash points for the crash-safety tests: when SLUICE_CRASH_AT names a
 * point, the process kills itself there with SIGKILL (no cleanup, like a
 * power cut). Unset in normal use. Read once, at the first crash point: the
 * tests set it in the environment of the process they start, and a
 * follower passes several crash points per source commit.
 */
export type CrashPoint = 'before-commit' | 'after-commit' | 'before-ack' | 'build-step' | 'retire';

let armed: string | null | undefined;

export function crashPoint(point: CrashPoint): void {
  armed ??= process.env.SLUICE_CRASH_AT ?? null;
  if (armed === point) process.kill(process.pid, 'SIGKILL');
}
