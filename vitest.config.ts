import fs from 'node:fs';
import { defineConfig } from 'vitest/config';

/**
 * Where the tests' scratch files go: a RAM file system when there is one
 * with room (Linux's /dev/shm) and TMPDIR is not set. Every commit of a
 * test database fsyncs; on a disk shared with other work that took ~17 ms
 * a commit here, on tmpfs nothing, and a crash test kills a process (the
 * OS keeps its writes), it never cuts the power. The CLIs and Python
 * writers the tests start inherit it.
 */
function scratchDir(): string | undefined {
  if (process.env.TMPDIR !== undefined) return undefined;
  try {
    const s = fs.statfsSync('/dev/shm');
    return s.bavail * s.bsize >= 2 ** 30 ? '/dev/shm' : undefined;
  } catch {
    return undefined;
  }
}
const tmpdir = scratchDir();

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/support/global-setup.ts'],
    // Subprocess and file-locking tests are I/O bound; two workers fit the 2-core CI machine.
    pool: 'forks',
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    ...(tmpdir === undefined ? {} : { env: { TMPDIR: tmpdir } }),
  },
});
