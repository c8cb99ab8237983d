/*
 * Crash points for the crash-safety tests: when SLUICE_CRASH_AT names a
 * point, the process kills itself there with SIGKILL (no cleanup, like a
 * power cut). Unset in normal use. Read once, at the first crash point: the
 * tests set it in the environment of the process they start, and a
 * follower passes several crash points per source commit.
 */
export type CrashPoint = 'before-commit' | 'after-commit' | 'before-ack' | 'build-step' | 'retire';

/** SLUICE_CRASH_AT as read at the first crash point ('' when unset: `??=` alone would read the environment again at every point). */
let armed: string | undefined;

export function crashPoint(point: CrashPoint): void {
  armed ??= process.env.SLUICE_CRASH_AT ?? '';
  if (armed === point) process.kill(process.pid, 'SIGKILL');
}
