// a building target's thread runs at a lower priority and takes its own back, leaving the other threads alone
import fs from 'node:fs';
import os from 'node:os';
import { test, expect } from '../../support/fixtures.ts';
import { BUILD_NICE, BuildPriority } from '../../../src/pipeline/run/index.ts';

/*
 * In `sluice run` each target follows on a thread of its own, and a first
 * build (a minute of CPU for a million rows into fts5) must not keep the
 * other targets' followers from a core. BuildPriority lowers the calling
 * thread alone (Linux: setpriority on 0 is the calling thread) while it
 * builds, and restores it. The nice values are read from /proc, per thread.
 */

/** The nice value of one thread of this process (field 19 of its stat, after the command's closing parenthesis). */
function niceOf(tid: string): number {
  const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[16]);
}

/** This thread's id (the link /proc/thread-self points at ends with it). */
const ownTid = () => fs.readlinkSync('/proc/thread-self').split('/').pop() as string;

/** Whether this process may take a lowered priority back (root, or a RLIMIT_NICE reaching nice 0). */
function mayRestore(): boolean {
  if (process.getuid?.() === 0) return true;
  const line = /^Max nice priority\s+(\d+)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
  return line !== null && 20 - Number(line[1]) <= os.getPriority(0);
}

test.runIf(process.platform === 'linux')(
  'lower() sets only the calling thread to nice 10 where it can be undone, and restore() takes its priority back',
  () => {
    const me = ownTid();
    const before = niceOf(me);
    const others = fs.readdirSync('/proc/self/task').filter((t) => t !== me);
    const othersBefore = others.map(niceOf);
    const p = new BuildPriority();
    p.lower();
    try {
      if (mayRestore() && before < BUILD_NICE) {
        expect(niceOf(me)).toBe(BUILD_NICE);
        expect(os.getPriority(0)).toBe(BUILD_NICE);
      } else {
        // Where the thread could never take its priority back, it is not lowered at all.
        expect(niceOf(me)).toBe(before);
      }
      // Every other thread of the process (the main thread, the libuv and V8 threads) keeps its priority.
      expect(others.map(niceOf)).toEqual(othersBefore);
    } finally {
      expect(p.restore()).toBe(true);
    }
    expect(niceOf(me)).toBe(before);
    // A second lower() after a restore lowers again; a restore() without a lower() is a no-op that succeeds.
    p.lower();
    expect(p.restore()).toBe(true);
    expect(new BuildPriority().restore()).toBe(true);
    expect(niceOf(me)).toBe(before);
  },
);
