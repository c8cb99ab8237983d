// a target on a full disk: every command that opens it says DB_OPEN_FAILED naming the file and that the disk is full
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { runCliAsync, runCliOk, mapLimit, makeDir, removeDir, trackerSource, expectOneLineError, write } from './support/cli.ts';

/*
 * SQLite makes a WAL database's -shm beside it on open, and grows it; on a
 * full disk that fails with "SQLITE_IOERR_SHMSIZE: disk I/O error". sync,
 * verify, explain and reinit (which attach the target to the source's
 * connection) printed just that, naming no file; health and protect said
 * DB_OPEN_FAILED naming the target but only "disk I/O error". Each now says
 * DB_OPEN_FAILED naming the target, that its disk is full, and to free
 * space. A full disk is a tiny tmpfs: mounting one needs root on Linux,
 * elsewhere the test is skipped (and when the mount is refused, with why).
 */

const canMount = process.platform === 'linux' && process.getuid?.() === 0;

let dir: string;
let disk: string;
let mounted: string | undefined;

beforeAll(() => {
  dir = makeDir();
  disk = path.join(dir, 'disk');
  fs.mkdirSync(disk);
  if (!canMount) return;
  const r = spawnSync('mount', ['-t', 'tmpfs', '-o', 'size=600k', 'tmpfs', disk], { encoding: 'utf8' });
  mounted = r.status === 0 ? undefined : (r.error?.message ?? r.stderr.trim());
  if (r.status === 0) mounted = '';
});
afterAll(() => {
  if (mounted === '') spawnSync('umount', [disk]);
  removeDir(dir);
});

describe.skipIf(!canMount)('a target on a full disk (a 600 KB tmpfs; needs root on Linux)', () => {
  test('sync, verify, explain, reinit, health and protect say DB_OPEN_FAILED naming the target and the full disk', async ({ skip }) => {
    if (mounted !== '') {
      console.warn(`skipped: cannot mount a tmpfs here (${mounted})`);
      skip();
      return;
    }
    const src = trackerSource(path.join(dir, 'app.db'), ['labels']);
    const tgt = path.join(disk, 'cache.db');
    await runCliOk(['sync', src, tgt]);
    write(src, "UPDATE labels SET name = name || '?'");
    // The disk fills up: no room for the target's -shm.
    const fill = fs.openSync(path.join(disk, 'fill'), 'w');
    try {
      const block = Buffer.alloc(4096);
      for (;;) fs.writeSync(fill, block);
    } catch (err) {
      expect((err as NodeJS.ErrnoException).code).toBe('ENOSPC');
    } finally {
      fs.closeSync(fill);
    }
    const runs = await mapLimit(
      [
        ['sync', src, tgt],
        ['verify', src, tgt],
        ['explain', src, tgt],
        ['reinit', src, tgt, 'labels'],
        ['health', tgt],
        ['protect', tgt],
      ],
      3,
      async (args) => ({ args, r: await runCliAsync(args) }),
    );
    for (const { args, r } of runs) {
      const name = args[0] as string;
      expect(r.status, `${name}: ${r.stderr}`).toBe(1);
      expectOneLineError(r, 'DB_OPEN_FAILED');
      expect(r.stderr, name).toContain(`target ${tgt}`);
      expect(r.stderr, name).toContain('disk');
      expect(r.stderr, name).toContain('full');
      expect(r.stderr, name).toContain('Free space');
    }
  });
});
