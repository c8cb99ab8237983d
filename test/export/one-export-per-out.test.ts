// one export writes an --out at a time: a second is refused up front, naming the running one; a dead one's lock blocks nothing
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe, runSqliteCli, runPython } from '../support/fixtures.ts';
import { cli } from '../apply/support/target.ts';
import { startCli, waitFor, dumpTables, sourceSeq, type Spawned } from '../cli/support/cli.ts';
import { tryProcessLock } from '../../src/sqlite/index.ts';
import { exportLockFile, readResumePoint } from '../../src/export/index.ts';
import { decodeCursor } from '../../src/feed/index.ts';

/*
 * Two exports writing one --out (a cron job started twice, a unit restarted
 * while the old one still ran) both appended to one JSONL file and renamed
 * over one FILE.cursor: the loser died with a raw "ENOENT: ... rename
 * 'e.jsonl.cursor.tmp' -> 'e.jsonl.cursor'", and the file could get batches
 * out of order, which no import gets past (BATCH_GAP). Two segment exports
 * into one folder: the loser died with SQLITE_IOERR_DELETE_NOENT, or
 * DB_NOT_WRITABLE blaming the source. Now an export holds a lock on its
 * --out for as long as it runs (a one-shot too): a second one is refused
 * before it writes anything, EXPORT_LOCKED, naming the --out, the running
 * export's pid and the fix. The operating system frees a killed export's
 * lock: the next export runs.
 */

const running: Spawned[] = [];
afterEach(() => {
  for (const r of running.splice(0)) if (r.child.exitCode === null && r.child.signalCode === null) r.child.kill('SIGKILL');
});

function source(tmp: string): string {
  const src = path.join(tmp, 'src.db');
  runSqliteCli(src, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');");
  expect(cli(['enable', src, 't']).status).toBe(0);
  return src;
}

const WRITES = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1], timeout=30)
for i in range(int(sys.argv[2]), int(sys.argv[3])):
    con.execute("INSERT INTO t VALUES (?, 'v')", (i,))
    con.commit()
`;

/** The seq the export at `out` saved its cursor at (-1 before it saved one). */
function exportedThrough(out: string): number {
  const c = readResumePoint(`${out}.cursor`).cursor;
  return c === undefined ? -1 : decodeCursor(c).seq;
}

/** Every file under `p` (a file, or a folder's files) with its bytes, and the cursor file beside it. */
function snapshotOf(p: string): Record<string, string> {
  const out: Record<string, string> = {};
  const files = fs.existsSync(p) && fs.statSync(p).isDirectory() ? fs.readdirSync(p).map((f) => path.join(p, f)) : [p];
  for (const f of [...files, `${p}.cursor`]) if (fs.existsSync(f)) out[f] = fs.readFileSync(f).toString('base64');
  return out;
}

describe.skipIf(process.platform === 'win32')('two exports to one --out', () => {
  for (const format of ['jsonl', 'segment'] as const)
    test(`${format}: a second export, following or one-shot, is refused before it writes, naming the running one; the first's output imports to the source`, async ({
      tmp,
    }) => {
      const src = source(tmp);
      const seg = format === 'segment' ? ['--format', 'segment'] : [];
      const out = path.join(tmp, format === 'jsonl' ? 'e.jsonl' : 'segs');
      const first = startCli(['export', src, '--out', out, ...seg, '--follow', '--batch', '5']);
      running.push(first);
      await waitFor('the first export to save its cursor', () => fs.existsSync(`${out}.cursor`));
      runPython(WRITES, [src, '100', '160']);
      await waitFor('the writes exported', () => exportedThrough(out) === sourceSeq(src));

      for (const follow of [[], ['--follow']]) {
        const before = snapshotOf(out);
        const second = cli(['export', src, '--out', out, ...seg, '--batch', '5', ...follow]);
        expect(second.status, second.stderr).toBe(1);
        expect(second.stderr).toContain('EXPORT_LOCKED');
        expect(second.stderr).toContain(out);
        expect(second.stderr).toContain(`process ${first.child.pid}`);
        expect(second.stderr).toContain(`kill ${first.child.pid}`);
        expect(second.stderr).not.toMatch(/ENOENT|SQLITE_|DB_NOT_WRITABLE/);
        expect(snapshotOf(out)).toEqual(before);
      }
      // Through a symlink to it: the same --out.
      const link = path.join(tmp, 'link');
      fs.symlinkSync(out, link);
      const viaLink = cli(['export', src, '--out', link, ...seg]);
      expect(viaLink.status, viaLink.stderr).toBe(1);
      expect(viaLink.stderr).toContain('EXPORT_LOCKED');

      runPython(WRITES, [src, '200', '230']);
      await waitFor('the last write exported', () => exportedThrough(out) === sourceSeq(src));
      first.child.kill('SIGTERM');
      expect((await first.exited).status, first.stderr()).toBe(0);
      const tgt = path.join(tmp, 'imported.db');
      const imported = cli(['import', tgt, out]);
      expect(imported.status, imported.stderr).toBe(0);
      expect(dumpTables(tgt, ['t'])).toEqual(dumpTables(src, ['t']));
    });

  for (const format of ['jsonl', 'segment'] as const)
    test(`${format}: a one-shot export takes the lock too, and a killed export's lock stops no one`, async ({ tmp }) => {
      const src = source(tmp);
      const seg = format === 'segment' ? ['--format', 'segment'] : [];
      const out = path.join(tmp, format === 'jsonl' ? 'e.jsonl' : 'segs');
      expect(cli(['export', src, '--out', out, ...seg]).status).toBe(0);

      // Held by another process (this one, as a one-shot export holds it while it runs): a one-shot is refused.
      const held = tryProcessLock(exportLockFile(out), 'export');
      if (!('taken' in held)) throw new Error('lock not taken');
      try {
        const before = snapshotOf(out);
        runPython(WRITES, [src, '100', '105']);
        const refused = cli(['export', src, '--out', out, ...seg]);
        expect(refused.status, refused.stderr).toBe(1);
        expect(refused.stderr).toContain('EXPORT_LOCKED');
        expect(refused.stderr).toContain(`process ${process.pid}`);
        expect(snapshotOf(out)).toEqual(before);
      } finally {
        held.taken.release();
      }

      // A follower killed outright: its lock went with it.
      const killed = startCli(['export', src, '--out', out, ...seg, '--follow']);
      running.push(killed);
      await waitFor('the follower to export the writes', () => exportedThrough(out) === sourceSeq(src));
      killed.child.kill('SIGKILL');
      await killed.exited;
      const after = cli(['export', src, '--out', out, ...seg]);
      expect(after.status, after.stderr).toBe(0);
      const tgt = path.join(tmp, 'imported.db');
      expect(cli(['import', tgt, out]).status).toBe(0);
      expect(dumpTables(tgt, ['t'])).toEqual(dumpTables(src, ['t']));
    });
});
