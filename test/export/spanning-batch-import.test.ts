// import refuses a file's batch that spans the target's seq: nothing shows its events up to there are the target's history
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeDir, removeDir, runCliAsync, scalar } from '../cli/support/cli.ts';

/*
 * A target imported to seq 2, brought to seq 4 by a sync; the source is then
 * restored from a copy at seq 2 and written again (seq 5), and exported from
 * the import's cursor: one batch (2,5]. Before, import applied its events
 * past seq 4 over the lost history's rows (exit 0). Now it refuses
 * (HISTORY_DIVERGED, exit 3) with nothing committed.
 */

const sqlite3 = (file: string, sql: string) => execFileSync('sqlite3', [file, sql], { encoding: 'utf8' });
const rows = (file: string) => sqlite3(file, "SELECT group_concat(id || '=' || v, ' ') FROM (SELECT * FROM t ORDER BY id)").trim();
const cli = (args: readonly string[]) => runCliAsync(args);

describe('a file batch spanning the seq of a target a sync brought ahead', () => {
  test('a restored source written again past the target: import refuses (HISTORY_DIVERGED), nothing committed', async () => {
    const dir = makeDir();
    try {
      const src = path.join(dir, 's.db');
      const tgt = path.join(dir, 'T.db');
      const bak = path.join(dir, 'bak.db');
      const f1 = path.join(dir, 'f1.jsonl');
      const f2 = path.join(dir, 'f2.jsonl');
      sqlite3(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES(1,'a'),(2,'b');");
      expect((await cli(['enable', src, 't'])).status).toBe(0);
      sqlite3(src, "INSERT INTO t VALUES(3,'c'); UPDATE t SET v='a2' WHERE id=1;");
      expect((await cli(['export', src, '--out', f1])).status).toBe(0);
      expect((await cli(['import', tgt, f1])).status).toBe(0);
      const cursor = scalar(tgt, "SELECT cursor FROM _sluice_projections WHERE name = 't'");
      sqlite3(src, 'PRAGMA wal_checkpoint(TRUNCATE);');
      fs.copyFileSync(src, bak);
      sqlite3(src, "UPDATE t SET v='OLD-HIST' WHERE id=2; INSERT INTO t VALUES(4,'old4');");
      expect((await cli(['sync', src, tgt])).status).toBe(0);
      expect(Number(scalar(tgt, "SELECT seq FROM _sluice_projections WHERE name = 't'"))).toBe(4);
      for (const suffix of ['-wal', '-shm']) fs.rmSync(src + suffix, { force: true });
      fs.copyFileSync(bak, src);
      sqlite3(src, "UPDATE t SET v='NEW3' WHERE id=3; INSERT INTO t VALUES(5,'new5'); INSERT INTO t VALUES(6,'new6');");
      expect((await cli(['export', src, '--since', String(cursor), '--out', f2])).status).toBe(0);

      const before = rows(tgt);
      const r = await cli(['import', tgt, f2]);
      expect(r.status, r.stdout + r.stderr).toBe(3);
      expect(r.stderr).toMatch(/HISTORY_DIVERGED: .*spans projection t's seq 4/);
      expect(rows(tgt)).toBe(before);
      expect(Number(scalar(tgt, "SELECT seq FROM _sluice_projections WHERE name = 't'"))).toBe(4);
    } finally {
      removeDir(dir);
    }
  });
});
