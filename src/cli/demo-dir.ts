import fs from 'node:fs';
import path from 'node:path';
import { SluiceError } from '../index.ts';
import { requireOutputPath } from '../internal.ts';

/** The databases the demo makes in its folder, and replaces on every run there. */
export const DEMO_DATABASES = { source: 'tracker.db', cache: 'cache.db' } as const;

/** Written first into every folder the demo runs in: what it made there, so a later run knows them for its own. */
export const DEMO_MARKER = '.sluice-demo';

const SUFFIXES = ['', '-wal', '-shm', '-journal'];

/**
 * Makes `dir` ready for the demo without ever replacing a file it did not
 * make: a missing folder is made; an existing one must hold the demo's
 * marker, or none of the files the demo would replace. Refused
 * (DEMO_WOULD_OVERWRITE, exit 1) before anything is written.
 */
export function prepareDemoDir(dir: string): void {
  requireOutputPath(dir, { given: '--dir', command: 'demo', kind: 'folder' });
  const marker = path.join(dir, DEMO_MARKER);
  const stat = fs.statSync(dir, { throwIfNoEntry: false });
  if (stat !== undefined && !stat.isDirectory()) {
    throw new SluiceError(
      'DEMO_WOULD_OVERWRITE',
      `sluice demo --dir ${dir}: ${dir} is not a folder. Pass a new or empty folder, or leave out --dir for a new temporary one.`,
    );
  }
  if (stat !== undefined && !fs.existsSync(marker)) {
    const taken = Object.values(DEMO_DATABASES)
      .flatMap((f) => SUFFIXES.map((s) => path.join(dir, f + s)))
      .find((f) => fs.existsSync(f));
    if (taken !== undefined) {
      throw new SluiceError(
        'DEMO_WOULD_OVERWRITE',
        `sluice demo --dir ${dir}: ${taken} is there and the demo did not make it (the folder has no ${DEMO_MARKER} marker); the demo replaces ${Object.values(DEMO_DATABASES).join(' and ')} in its folder, so it leaves this one alone. Pass a new or empty folder, or leave out --dir for a new temporary one.`,
      );
    }
  }
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(
    marker,
    `Made by sluice demo: ${Object.values(DEMO_DATABASES).join(', ')} (and their -wal, -shm) in this folder are the demo's, and a later sluice demo --dir here replaces them.\n`,
  );
}
