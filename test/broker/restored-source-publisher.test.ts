// the publisher of a source restored from an older copy: its new history's batches are stored (not dropped as the old history's duplicates), and it publishes one snapshot for the restore, not one per run
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { makeDir, removeDir, runCliAsync, parseJson, dumpTables } from '../cli/support/cli.ts';
import { natsForFile, publishOnce, sourceIdOf, streamMessages } from './support/broker.ts';
import { defaultStreamName, Publisher, subjectsOf } from '../../src/broker/index.ts';

/*
 * A source published to seq 3 (batches (0,1], (1,2], (2,3], one per write)
 * is restored from a backup taken at seq 0, within the broker's 2-minute
 * dedup window, and written again. Its new history's batches cover the same
 * windows as the old one's. Their Nats-Msg-Id was `<source>:<from>-<to>`,
 * the same in any history: the broker dropped them as duplicates of the old
 * history's (publish said "3 the broker already had", exit 0), and every
 * subscriber, new or old, stopped at BATCH_GAP, run after run. A batch's id
 * now carries the history it belongs to (the digest of the journal event
 * its cursor anchors on), so the new history's batches are stored, while a
 * batch of the same history published again is still dropped.
 *
 * And each one-shot publish after the restore resumed from the old
 * history's last batch still in the stream (the furthest position), found
 * that it does not continue the source (SEQ_REGRESSED) and published a
 * whole new snapshot, run after run, until the new history passed the old
 * high-water mark. It now goes on from the furthest position of the
 * source's own history: one snapshot for the restore.
 */

const nats = natsForFile();
const sqlite3 = (file: string, sql: string) => execFileSync('sqlite3', [file, sql], { encoding: 'utf8' });
const cli = (args: readonly string[]) => runCliAsync(args);

/** A source published through seq 3, one batch per write, with a backup taken at seq 0; then the backup is put back. */
async function restored(dir: string, url: string) {
  const src = path.join(dir, 'src.db');
  const backup = path.join(dir, 'backup.db');
  sqlite3(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1,'a');");
  expect((await cli(['enable', src, 't'])).status).toBe(0);
  const sid = sourceIdOf(src);
  await publishOnce(src, url); // the snapshot at seq 0
  sqlite3(src, 'PRAGMA wal_checkpoint(TRUNCATE);');
  fs.copyFileSync(src, backup);
  for (const id of [11, 12, 13]) {
    sqlite3(src, `INSERT INTO t VALUES(${id},'old');`);
    await publishOnce(src, url); // (0,1], (1,2], (2,3]
  }
  const old = path.join(dir, 'old.db');
  const sub = await cli(['subscribe', old, '--nats', url, '--source', sid]);
  expect(sub.status, sub.stderr).toBe(0);
  fs.copyFileSync(backup, src);
  for (const suffix of ['-wal', '-shm']) fs.rmSync(src + suffix, { force: true });
  return { src, sid, old };
}

/** Subscribes `target` (a new one, or one of the old history), expecting it to end with the source's rows. */
async function subscribedLikeSource(target: string, src: string, url: string, sid: string) {
  for (let run = 0; run < 2; run++) {
    const r = await cli(['subscribe', target, '--nats', url, '--source', sid, '--json']);
    expect(r.status, r.stderr).toBe(0);
    parseJson(r, S.subscribeOutput);
    expect(dumpTables(target, ['t'])).toEqual(dumpTables(src, ['t']));
  }
}

describe('a source restored from an older copy, published again', () => {
  test("a follower's batches of the new history are stored, not dropped as the old history's duplicates; every subscriber ends as the source", async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const { src, sid, old } = await restored(dir, url);
      // As publish --follow: one publisher, a pass after each write.
      const p = await Publisher.open(src, url);
      let duplicates = 0;
      let batches = 0;
      try {
        const first = await p.runOnce();
        expect(first.snapshots.map((s) => s.reason)).toEqual(['SEQ_REGRESSED']);
        for (const id of [21, 22, 23, 24, 25]) {
          sqlite3(src, `INSERT INTO t VALUES(${id},'new');`);
          const pass = await p.runOnce();
          duplicates += pass.duplicates;
          batches += pass.batches;
        }
      } finally {
        await p.close();
      }
      expect({ batches, duplicates }).toEqual({ batches: 5, duplicates: 0 });
      await subscribedLikeSource(path.join(dir, 'new.db'), src, url, sid);
      await subscribedLikeSource(old, src, url, sid);
    } finally {
      removeDir(dir);
    }
  });

  test('a batch of the same history published again is still dropped by the dedup window', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = path.join(dir, 'src.db');
      sqlite3(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1,'a');");
      expect((await cli(['enable', src, 't'])).status).toBe(0);
      await publishOnce(src, url);
      sqlite3(src, "INSERT INTO t VALUES(2,'b');");
      // Two publishers at the same position (as one killed after the broker's ack and before its state file, started again).
      const a = await Publisher.open(src, url);
      const b = await Publisher.open(src, url);
      try {
        expect(await a.runOnce()).toMatchObject({ batches: 1, duplicates: 0 });
        expect(await b.runOnce()).toMatchObject({ batches: 1, duplicates: 1 });
      } finally {
        await a.close();
        await b.close();
      }
      const batches = (await streamMessages(url, defaultStreamName(sourceIdOf(src)))).filter(
        (m) => m.subject === subjectsOf(sourceIdOf(src)).batch,
      );
      expect(batches).toHaveLength(1);
    } finally {
      removeDir(dir);
    }
  });

  test('one-shot publishes after the restore publish one snapshot for it, then go on with the new history', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const { src, sid, old } = await restored(dir, url);
      const reasons: string[] = [];
      for (const id of [21, 22, 0, 23]) {
        if (id !== 0) sqlite3(src, `INSERT INTO t VALUES(${id},'new');`);
        const r = await cli(['publish', src, '--nats', url, '--json']);
        expect(r.status, r.stderr).toBe(0);
        const out = parseJson(r, S.publishOutput);
        reasons.push(...out.snapshots.map((s) => s.reason));
      }
      expect(reasons).toEqual(['SEQ_REGRESSED']);
      await subscribedLikeSource(path.join(dir, 'new.db'), src, url, sid);
      await subscribedLikeSource(old, src, url, sid);
    } finally {
      removeDir(dir);
    }
  });
});
