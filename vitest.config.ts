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

/**
 * The test files that need a process of their own: those that import a
 * support module which sets the environment for src/ as it loads
 * (test/apply/support/small-build-chunk.ts: a src/ module reads
 * SLUICE_BUILD_CHUNK once, when it is first imported, and every CLI the
 * test starts inherits it). Found by that import, so a new such test needs
 * no entry here.
 */
const SETS_ENV_AT_LOAD = /from '[./]*(?:apply\/)?support\/small-build-chunk\.ts'/;
const ownProcess = fs
  .readdirSync('test', { recursive: true, encoding: 'utf8' })
  .map((f) => `test/${f.split('\\').join('/')}`)
  .filter((f) => f.endsWith('.test.ts') && SETS_ENV_AT_LOAD.test(fs.readFileSync(f, 'utf8')));

/** What every test file runs under, whichever project below holds it. */
const common = {
  // Subprocess and file-locking tests are I/O bound; two workers fit the 2-core CI machine.
  pool: 'forks',
  testTimeout: 60_000,
  hookTimeout: 60_000,
  ...(tmpdir === undefined ? {} : { env: { TMPDIR: tmpdir } }),
} as const;

export default defineConfig({
  test: {
    // Once for the run (the projects below do not repeat it).
    globalSetup: ['test/support/global-setup.ts'],
    maxWorkers: 2,
    projects: [
      {
        // A worker runs one file after another and keeps the modules they import (src/, zod, kysely...):
        // importing them again for each of ~200 files cost about half a second of a core per file.
        // No test sets the environment or a global for another: each makes its own files in a temp dir.
        test: { ...common, name: 'shared', include: ['test/**/*.test.ts'], exclude: ownProcess, isolate: false },
      },
      ...(ownProcess.length === 0 ? [] : [{ test: { ...common, name: 'own-process', include: ownProcess, isolate: true } }]),
    ],
  },
});
