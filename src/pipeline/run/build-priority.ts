import fs from 'node:fs';
import os from 'node:os';

/*
 * A target's first build (a million rows into an fts5 index takes its thread
 * a minute of CPU) shares the machine's cores with the other targets'
 * threads of the same `sluice run`, whose followers wake per source commit
 * and each need a fraction of a millisecond. The scheduler shares a core
 * fairly between runnable threads, so a follower woken beside the build
 * waits for its turn: bench/run-build.ts --kind fts5 measured another
 * target's p99 over 2x its figure without the build in half of its runs.
 * So a building target's thread runs at a lower priority (nice
 * BUILD_NICE), and goes back to its own once it follows.
 *
 * Only on Linux, where setpriority on "this process" (0) sets the calling
 * thread's priority alone; elsewhere it would lower the whole process. And
 * only where the thread may raise its priority again afterwards (root, or a
 * RLIMIT_NICE that allows it: `ulimit -e`, systemd's LimitNICE=), so that a
 * target never follows at the lowered priority.
 */
export const BUILD_NICE = 10;

/** Lowers and restores the calling thread's priority around a build; a no-op where that cannot be undone. */
export class BuildPriority {
  /** The thread's priority before it was lowered (undefined: not lowered). */
  #before: number | undefined;

  /** Lowers the calling thread's priority to BUILD_NICE, where it can be restored. */
  lower(): void {
    if (this.#before !== undefined || !canRestore()) return;
    try {
      const now = os.getPriority(0);
      if (now >= BUILD_NICE) return;
      os.setPriority(0, BUILD_NICE);
      this.#before = now;
    } catch {
      /* best effort: the build runs at the thread's priority */
    }
  }

  /** Puts the thread's priority back; false when it could not (it stays lowered). */
  restore(): boolean {
    const before = this.#before;
    if (before === undefined) return true;
    this.#before = undefined;
    try {
      os.setPriority(0, before);
      return true;
    } catch {
      return false;
    }
  }
}

/** Whether this process may raise a thread's priority back to what it was: Linux, and root or a RLIMIT_NICE that reaches nice 0. */
function canRestore(): boolean {
  if (process.platform !== 'linux') return false;
  if (process.getuid?.() === 0) return true;
  try {
    const line = /^Max nice priority\s+(\d+)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
    // RLIMIT_NICE r lets a thread lower its nice value down to 20 - r.
    return line !== null && 20 - Number(line[1]) <= os.getPriority(0);
  } catch {
    return false;
  }
}
