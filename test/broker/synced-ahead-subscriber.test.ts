// a target that sync brought ahead of the stream is not rebuilt backwards by subscribe: it goes on from its own cursor
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { makeDir, removeDir, runCliAsync, parseJson, scalar } from '../cli/support/cli.ts';
import { natsForFile, sourceIdOf } from './support/broker.ts';

/*
 * A target fed by subscribe, then brought past the stream by a plain `sluice
 * sync` of its source (the publisher has not published the latest writes
 * yet): the stream's last snapshot (seq 0) lies below the target's seq 2 and
 * no batch of the stream ends there, but the stream never reached seq 2, so
 * nothing says the source went back: it is merely behind. Before, subscribe
 * called it SEQ_REGRESSED ("restored from an older copy") and rebuilt the
 * target from that snapshot and its batch, back to seq 1 (row 4 lost, exit
 * 0, health green). Now it goes on from the target's cursor, applying the
 * stream's batches past it once the publisher publishes them.
 */

const nats = natsForFile();
const sqlite3 = (file: string, sql: string) => execFileSync('sqlite3', [file, sql], { encoding: 'utf8' });
const ids = (file: string) => sqlite3(file, 'SELECT group_concat(id) FROM (SELECT id FROM t ORDER BY id)').trim();
const seqOf = (file: string) => Number(scalar(file, "SELECT seq FROM _sluice_projections WHERE name = 't'"));
const cli = (args: readonly string[]) => runCliAsync(args);

describe('a subscriber whose target a sync brought ahead of the stream', () => {
  test('goes on from the target cursor (nothing rebuilt, nothing applied), then applies the batches past it', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = path.join(dir, 'src.db');
      const tgt = path.join(dir, 'T.db');
      sqlite3(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, title TEXT); INSERT INTO t VALUES(1,'one'),(2,'two');");
      expect((await cli(['enable', src, 't'])).status).toBe(0);
      const sid = sourceIdOf(src);
      expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
      const first = await cli(['subscribe', tgt, '--nats', url, '--source', sid]);
      expect(first.status, first.stderr).toBe(0);
      sqlite3(src, "INSERT INTO t VALUES(3,'three');");
      expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
      sqlite3(src, "INSERT INTO t VALUES(4,'four');");
      const s = await cli(['sync', src, tgt]);
      expect(s.status, s.stderr).toBe(0);
      expect(ids(tgt)).toBe('1,2,3,4');
      expect(seqOf(tgt)).toBe(2);

      const r = await cli(['subscribe', tgt, '--nats', url, '--source', sid, '--json']);
      expect(r.status, r.stderr).toBe(0);
      const out = parseJson(r, S.subscribeOutput);
      expect(out.rebuilt).toBeUndefined();
      expect(r.stderr).not.toMatch(/SEQ_REGRESSED|older copy/);
      expect(out.started).toBe('end');
      expect(ids(tgt)).toBe('1,2,3,4');
      expect(seqOf(tgt)).toBe(2);
      // A second run (the first recorded the subscriber as the target's feeder) still goes on.
      const again = parseJson(await cli(['subscribe', tgt, '--nats', url, '--source', sid, '--json']), S.subscribeOutput);
      expect(again.rebuilt).toBeUndefined();
      expect(ids(tgt)).toBe('1,2,3,4');

      // The publisher catches up, then publishes a write past the target: applied as usual, with nothing rebuilt.
      expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
      sqlite3(src, "INSERT INTO t VALUES(5,'five');");
      expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
      const next = parseJson(await cli(['subscribe', tgt, '--nats', url, '--source', sid, '--json']), S.subscribeOutput);
      expect(next.rebuilt).toBeUndefined();
      expect(ids(tgt)).toBe('1,2,3,4,5');
      expect(seqOf(tgt)).toBe(3);
      const h = await cli(['health', tgt]);
      expect(h.status, h.stdout + h.stderr).toBe(0);
    } finally {
      removeDir(dir);
    }
  });

  test('a target sync made, past the last snapshot of a stream that got there before it, still rebuilds (the source went back)', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = path.join(dir, 'src.db');
      const tgt = path.join(dir, 'T.db');
      const backup = path.join(dir, 'backup.db');
      sqlite3(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, title TEXT); INSERT INTO t VALUES(1,'one');");
      expect((await cli(['enable', src, 't'])).status).toBe(0);
      const sid = sourceIdOf(src);
      expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
      sqlite3(src, "INSERT INTO t VALUES(2,'two'); PRAGMA wal_checkpoint(TRUNCATE);"); // seq 1
      fs.copyFileSync(src, backup);
      sqlite3(src, "INSERT INTO t VALUES(10,'old'); INSERT INTO t VALUES(11,'old');"); // seq 2, 3
      expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
      // Fed by sync alone (no subscriber ever fed it): the stream's batch (1,3] got to its seq 3.
      expect((await cli(['sync', src, tgt])).status).toBe(0);
      expect(seqOf(tgt)).toBe(3);
      fs.copyFileSync(backup, src);
      for (const suffix of ['-wal', '-shm']) fs.rmSync(src + suffix, { force: true });
      const pub = await cli(['publish', src, '--nats', url]);
      expect(pub.stderr).toMatch(/snapshot at seq 1 .*SEQ_REGRESSED/);
      const r = await cli(['subscribe', tgt, '--nats', url, '--source', sid, '--json']);
      expect(r.status, r.stderr).toBe(0);
      expect(parseJson(r, S.subscribeOutput).rebuilt).toMatchObject({ reason: 'SEQ_REGRESSED', targetSeq: 3, snapshotSeq: 1 });
      expect(ids(tgt)).toBe('1,2');
    } finally {
      removeDir(dir);
    }
  });
});
