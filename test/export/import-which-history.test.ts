// Which file wins: import of files of a source restored from an older copy, of an older generation, of two histories, or cut short
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeDir, removeDir, runCliAsync, type CliResult } from '../cli/support/cli.ts';

/*
 * Review round 14, bugs 1, 2, 3, 6 and 7 (all exit 0 with a wrong target,
 * health green, before this):
 * 1. a new export of a source restored from an older copy, imported into a
 *    target of the old history: its batch spanning the target's seq was
 *    applied past it, over the old history's rows (the file's snapshot was
 *    skipped as older than the target);
 * 2. the export written before the restore, imported again after the new
 *    one rebuilt the target, rebuilt it back to the history the source lost
 *    (equal seqs: whichever history was imported last won);
 * 3. an export from before `enable --exclude`, at the target's seq and an
 *    earlier generation, rebuilt the target with the excluded column and its
 *    values;
 * 6. one file holding the old history and, after it, a snapshot of the new
 *    one at a lower seq (its .cursor deleted, exported again) imported to
 *    the lost history;
 * 7. a file cut inside its snapshot left an empty target that health called
 *    fine.
 */

const FORMATS = ['jsonl', 'segment'] as const;
type Format = (typeof FORMATS)[number];

/** Runs SQL (or a dot command) with the sqlite3 shell, a writer that is not sluice. */
function sh(file: string, sql: string): string {
  const r = spawnSync('sqlite3', [file, sql], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`sqlite3 ${file}: ${r.stderr}`);
  return r.stdout.trim();
}

async function cli(...args: string[]): Promise<CliResult> {
  return runCliAsync(args);
}

async function ok(...args: string[]): Promise<CliResult> {
  const r = await cli(...args);
  expect(r.status, `sluice ${args.join(' ')}: ${r.stderr}`).toBe(0);
  return r;
}

/** `sluice export SRC --out OUT` in `format`. */
async function exported(src: string, out: string, format: Format): Promise<CliResult> {
  return cli('export', src, '--out', out, '--format', format);
}

function out(dir: string, name: string, format: Format): string {
  return path.join(dir, format === 'segment' ? name : `${name}.jsonl`);
}

/** Table t's rows as `id:v`, in key order. */
function rows(file: string): string {
  return sh(file, "SELECT group_concat(id||':'||v, ' ') FROM (SELECT * FROM t ORDER BY id)");
}

/** What a sync of the source gives (a fresh target). */
async function synced(src: string, dir: string): Promise<string> {
  const s = path.join(dir, `sync-${Math.random().toString(36).slice(2)}.db`);
  await ok('sync', src, s);
  return rows(s);
}

describe('which history an import keeps', () => {
  for (const format of FORMATS) {
    test(`${format}: a new export of a restored source, imported into a target of the old history, rebuilds it once a batch of it ends at the target's seq`, async () => {
      const dir = makeDir();
      try {
        const src = path.join(dir, 'src.db');
        sh(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1,'a'),(2,'b');");
        await ok('enable', src, 't');
        sh(src, "INSERT INTO t VALUES(3,'c')");
        const old = path.join(dir, 'old.db');
        sh(src, `VACUUM INTO '${old}'`); // a backup at seq 1
        sh(src, "INSERT INTO t VALUES(4,'d'); INSERT INTO t VALUES(5,'e'); DELETE FROM t WHERE id=1;");
        const tgt = path.join(dir, 'A.db');
        expect((await exported(src, out(dir, 'e1', format), format)).status).toBe(0);
        await ok('import', tgt, out(dir, 'e1', format)); // the old history, seq 4
        sh(src, `.restore '${old}'`);
        sh(src, "INSERT INTO t VALUES(6,'NEW')"); // seq 2 of the new history
        expect((await exported(src, out(dir, 'e2', format), format)).status).toBe(0);
        await ok('import', tgt, out(dir, 'e2', format)); // reaches seq 2 only: older than the target by seq, nothing told
        sh(src, "INSERT INTO t VALUES(7,'x'); INSERT INTO t VALUES(8,'y');"); // seq 4 of the new history
        expect((await exported(src, out(dir, 'e2', format), format)).status).toBe(0);
        const r = await cli('import', tgt, out(dir, 'e2', format), '--json');
        expect(r.status, r.stderr).toBe(0);
        expect(rows(tgt)).toBe(await synced(src, dir));
        expect(JSON.parse(r.stdout).projections[0]).toMatchObject({ name: 't', seq: 4, rebuilt: 'HISTORY_DIVERGED' });
        await ok('health', tgt);
      } finally {
        removeDir(dir);
      }
    });

    test(`${format}: two exports of one source cut in other places, and a sync, feeding one target in turn: no rebuild, nothing left behind, each time as sync`, async () => {
      const dir = makeDir();
      try {
        const src = path.join(dir, 'src.db');
        sh(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1,'a');");
        await ok('enable', src, 't');
        const tgt = path.join(dir, 'A.db');
        let id = 10;
        const write = (n: number) => {
          for (let i = 0; i < n; i++) sh(src, `INSERT INTO t VALUES(${++id},'v${id}')`);
        };
        // e1 and e2 each cut their batches where their own runs ended: a batch of one spans the seq the other left the target at.
        const steps: (readonly [string, number])[] = [
          ['e1', 4],
          ['e2', 3],
          ['e1', 4],
          ['e2', 5],
          ['sync', 2],
          ['e2', 3],
          ['e1', 4],
          ['e2', 2],
        ];
        for (const [via, n] of steps) {
          write(n);
          if (via === 'sync') await ok('sync', src, tgt);
          else {
            expect((await exported(src, out(dir, via, format), format)).status).toBe(0);
            const r = await cli('import', tgt, out(dir, via, format), '--json');
            expect(r.status, r.stderr).toBe(0);
            const p = JSON.parse(r.stdout).projections[0];
            expect({ via, rebuilt: p.rebuilt, action: p.action }).toEqual({ via, rebuilt: undefined, action: undefined });
          }
          expect(rows(tgt), `after ${via}`).toBe(await synced(src, dir));
        }
        await ok('health', tgt);
      } finally {
        removeDir(dir);
      }
    });

    test(`${format}: the export of the history a restore lost, imported after the new one rebuilt the target, does not bring that history back`, async () => {
      const dir = makeDir();
      try {
        const src = path.join(dir, 'src.db');
        sh(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1,'a'),(2,'b');");
        await ok('enable', src, 't');
        const e1 = out(dir, 'e1', format);
        expect((await exported(src, e1, format)).status).toBe(0); // a snapshot at seq 0
        sh(src, "INSERT INTO t VALUES(3,'c')");
        const old = path.join(dir, 'old.db');
        sh(src, `VACUUM INTO '${old}'`); // a backup at seq 1
        sh(src, "INSERT INTO t VALUES(4,'d'); UPDATE t SET v='A' WHERE id=1;");
        expect((await exported(src, e1, format)).status).toBe(0);
        const tgt = path.join(dir, 'A.db');
        await ok('import', tgt, e1); // the old history, seq 3
        sh(src, `.restore '${old}'`);
        sh(src, "INSERT INTO t VALUES(5,'e'); UPDATE t SET v='B' WHERE id=2;"); // the new history, seq 3
        const e2 = out(dir, 'e2', format);
        expect((await exported(src, e2, format)).status).toBe(0);
        const rebuilt = await cli('import', tgt, e2, '--json');
        expect(rebuilt.status, rebuilt.stderr).toBe(0);
        expect(JSON.parse(rebuilt.stdout).projections[0]).toMatchObject({ seq: 3, rebuilt: 'HISTORY_DIVERGED' });
        const want = await synced(src, dir);
        expect(rows(tgt)).toBe(want);

        // The old file again: it changes nothing, and says why.
        const again = await cli('import', tgt, e1);
        expect(again.status, again.stderr).toBe(0);
        expect(again.stdout + again.stderr).toMatch(/history of the source that t was rebuilt away from/);
        expect(rows(tgt)).toBe(want);
        await ok('health', tgt);
        // And the new one again: nothing to do, still.
        await ok('import', tgt, e2);
        expect(rows(tgt)).toBe(want);
      } finally {
        removeDir(dir);
      }
    });

    test(`${format}: an export from before enable --exclude, at the target's seq, changes nothing`, async () => {
      const dir = makeDir();
      try {
        const src = path.join(dir, 'src.db');
        sh(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v, secret); INSERT INTO t VALUES(1,'a','s1'),(2,'b','s2');");
        await ok('enable', src, 't');
        sh(src, "UPDATE t SET secret='s1b' WHERE id=1"); // seq 1
        const e1 = out(dir, 'e', format);
        expect((await exported(src, e1, format)).status).toBe(0);
        const a = path.join(dir, 'A.db');
        await ok('import', a, e1);
        await ok('enable', src, 't', '--exclude', 'secret'); // re-armed at generation 2, still at seq 1
        const e2 = out(dir, 'e2', format);
        expect((await exported(src, e2, format)).status).toBe(0);
        await ok('import', a, e2);
        const c = path.join(dir, 'C.db');
        await ok('import', c, e2);
        const y = path.join(dir, 'Y.db');
        await ok('sync', src, y);
        for (const tgt of [a, c, y]) {
          const r = await cli('import', tgt, e1, '--json');
          expect(r.status, r.stderr).toBe(0);
          expect(JSON.parse(r.stdout).projections).toEqual([{ name: 't', state: 'active', seq: 1 }]);
          expect(sh(tgt, "SELECT count(*) FROM pragma_table_info('t') WHERE name = 'secret'")).toBe('0');
          expect(sh(tgt, "SELECT count(*) FROM t WHERE v LIKE 's%'")).toBe('0');
        }
      } finally {
        removeDir(dir);
      }
    });

    test(`${format}: one file or folder whose markers go back in seq (a snapshot of another history after them) is refused`, async () => {
      const dir = makeDir();
      try {
        const src = path.join(dir, 'src.db');
        sh(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1,'a'),(2,'b');");
        await ok('enable', src, 't');
        const e = out(dir, 'e', format);
        expect((await exported(src, e, format)).status).toBe(0);
        sh(src, "INSERT INTO t VALUES(3,'c')");
        const old = path.join(dir, 'old.db');
        sh(src, `VACUUM INTO '${old}'`);
        sh(src, "INSERT INTO t VALUES(4,'d'); INSERT INTO t VALUES(5,'e'); DELETE FROM t WHERE id=1;");
        expect((await exported(src, e, format)).status).toBe(0);
        sh(src, `.restore '${old}'`);
        sh(src, "INSERT INTO t VALUES(6,'NEW')");
        expect((await exported(src, e, format)).status).toBe(3); // HISTORY_DIVERGED
        fs.rmSync(`${e}.cursor`);
        const again = await exported(src, e, format);
        if (again.status !== 0) return; // (export refuses to append to it: nothing for import to judge)
        const tgt = path.join(dir, 'B.db');
        const r = await cli('import', tgt, e);
        expect(r.status).toBe(1);
        expect(r.stderr).toMatch(/IMPORT_OUT_OF_ORDER/);
        expect(r.stderr).toMatch(/seq 2.*seq 4|back/);
        expect(fs.existsSync(tgt)).toBe(false); // nothing committed: no target left
      } finally {
        removeDir(dir);
      }
    });
  }

  test('a file cut inside its snapshot, into a new target, is refused and leaves no target', async () => {
    const dir = makeDir();
    try {
      const src = path.join(dir, 'src.db');
      sh(src, 'CREATE TABLE t(id INTEGER PRIMARY KEY, v)');
      sh(src, "WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i < 999) INSERT INTO t SELECT i, 'v' || i FROM n");
      await ok('enable', src, 't');
      const e = path.join(dir, 'e.jsonl');
      await ok('export', src, '--out', e);
      const part = path.join(dir, 'part.jsonl');
      fs.writeFileSync(part, fs.readFileSync(e).subarray(0, 20_000));
      const tgt = path.join(dir, 'N.db');
      const r = await cli('import', tgt, part);
      expect(r.status).toBe(1);
      expect(r.stderr).toMatch(/IMPORT_NO_SNAPSHOT/);
      expect(r.stderr).toMatch(/snapshot .*not complete|ends inside/);
      expect(fs.existsSync(tgt)).toBe(false);
      const h = await cli('health', tgt);
      expect(h.status).not.toBe(0);
      // The whole file then builds it.
      await ok('import', tgt, e);
      expect(sh(tgt, 'SELECT count(*) FROM t')).toBe('1000');
      // Into a target that holds the projection, the cut file changes nothing and is no error (a file still being written).
      await ok('import', tgt, part);
    } finally {
      removeDir(dir);
    }
  });
});
