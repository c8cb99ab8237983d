// a batch that spans a sync-ahead target's seq is not applied past it over rows of a history the source lost
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { makeDir, removeDir, runCliAsync, parseJson } from '../cli/support/cli.ts';
import { natsForFile, sourceIdOf } from './support/broker.ts';

/*
 * A target fed by subscribe (seq 2), brought to seq 4 by a sync; the source is
 * then restored from a copy at seq 2 and written again (seq 5), published as
 * one batch (2,5]. Before, subscribe took the stream as merely behind the
 * target and applied the batch's events past seq 4 over the lost history's
 * rows (exit 0, health green, target != source). Now it rebuilds from the
 * stream's snapshot (HISTORY_DIVERGED) and ends equal to the source.
 */

const nats = natsForFile();
const sqlite3 = (file: string, sql: string) => execFileSync('sqlite3', [file, sql], { encoding: 'utf8' });
const rows = (file: string) => sqlite3(file, "SELECT group_concat(id || '=' || v, ' ') FROM (SELECT * FROM t ORDER BY id)").trim();
const cli = (args: readonly string[]) => runCliAsync(args);

describe('a batch spanning the seq of a target a sync brought ahead', () => {
  test('a restored source written again past the target: subscribe rebuilds, the target equals the source', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = path.join(dir, 's.db');
      const tgt = path.join(dir, 'T.db');
      const bak = path.join(dir, 'bak.db');
      sqlite3(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES(1,'a'),(2,'b');");
      expect((await cli(['enable', src, 't'])).status).toBe(0);
      const sid = sourceIdOf(src);
      sqlite3(src, "INSERT INTO t VALUES(3,'c');");
      expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
      expect((await cli(['subscribe', tgt, '--nats', url, '--source', sid])).status).toBe(0);
      sqlite3(src, "UPDATE t SET v='a2' WHERE id=1;");
      expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
      expect((await cli(['subscribe', tgt, '--nats', url, '--source', sid])).status).toBe(0);
      sqlite3(src, 'PRAGMA wal_checkpoint(TRUNCATE);');
      fs.copyFileSync(src, bak);
      sqlite3(src, "UPDATE t SET v='OLD-HIST' WHERE id=2; INSERT INTO t VALUES(4,'old4');");
      expect((await cli(['sync', src, tgt])).status).toBe(0);
      for (const suffix of ['-wal', '-shm']) fs.rmSync(src + suffix, { force: true });
      fs.copyFileSync(bak, src);
      sqlite3(src, "UPDATE t SET v='NEW3' WHERE id=3; INSERT INTO t VALUES(5,'new5'); INSERT INTO t VALUES(6,'new6');");
      expect((await cli(['publish', src, '--nats', url])).status).toBe(0);

      const r = await cli(['subscribe', tgt, '--nats', url, '--source', sid, '--json']);
      expect(r.status, r.stderr).toBe(0);
      expect(parseJson(r, S.subscribeOutput).rebuilt).toMatchObject({ reason: 'HISTORY_DIVERGED', targetSeq: 4 });
      expect(rows(tgt)).toBe(rows(src));
      expect(rows(tgt)).toBe('1=a2 2=b 3=NEW3 5=new5 6=new6');
      const h = await cli(['health', tgt]);
      expect(h.status, h.stdout + h.stderr).toBe(0);
    } finally {
      removeDir(dir);
    }
  });
});
