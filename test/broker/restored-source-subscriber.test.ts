// a subscriber of a source restored from an older copy rebuilds from the snapshot its publisher published at the restored seq
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { makeDir, removeDir, runCliAsync, parseJson, dumpTables, scalar, startCli, waitFor } from '../cli/support/cli.ts';
import { natsForFile, publishRaw, sourceIdOf, streamMessages } from './support/broker.ts';
import { NatsServer } from '../support/nats-server.ts';

/*
 * The source is restored from a backup taken at seq 1 after its subscriber
 * applied the old history to seq 3 (rows 10 and 11). Its publisher notices
 * (SEQ_REGRESSED) and publishes a snapshot at seq 1, then the new history's
 * batches (seq 2 on). The subscriber's target is at seq 3 of the old
 * history: the stream's last snapshot lies below it, later in stream order
 * than anything the target applied. Before, subscribe took the first batch
 * ending after seq 3 and applied it over the old rows (exit 0, health
 * green, rows 10 and 11 kept); now it rebuilds from that snapshot, as sync
 * rebuilds a target synced to the old seq 3 (HISTORY_DIVERGED): with
 * HISTORY_DIVERGED where a batch of the new history ends at the target's
 * seq and says which event is there, and SEQ_REGRESSED where none does.
 */

const nats = natsForFile();
const sqlite3 = (file: string, sql: string) => execFileSync('sqlite3', [file, sql], { encoding: 'utf8' });
const rows = (file: string) => dumpTables(file, ['t']);
const listed = (file: string) => sqlite3(file, "SELECT id || '=' || v FROM t ORDER BY id").trim().split('\n');
const seqOf = (file: string) => Number(scalar(file, "SELECT seq FROM _sluice_projections WHERE name = 't'"));

const cli = (args: readonly string[]) => runCliAsync(args);

/** A source with a backup taken at seq 1, then at seq 3 of its old history (rows 10 and 11 since the backup), published. */
async function oldHistory(dir: string, url: string) {
  const src = path.join(dir, 'src.db');
  const tgt = path.join(dir, 'tgt.db');
  const backup = path.join(dir, 'backup.db');
  sqlite3(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1,'a');");
  expect((await cli(['enable', src, 't'])).status).toBe(0);
  const sid = sourceIdOf(src);
  sqlite3(src, "INSERT INTO t VALUES(2,'b');"); // seq 1
  sqlite3(src, 'PRAGMA wal_checkpoint(TRUNCATE);');
  fs.copyFileSync(src, backup);
  sqlite3(src, "INSERT INTO t VALUES(10,'old'); INSERT INTO t VALUES(11,'old');"); // seq 2, 3
  expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
  return { src, tgt, backup, sid };
}

/** oldHistory, with a subscriber and a synced target at seq 3; then the backup is put back. */
async function restoredSource(dir: string, url: string) {
  const { src, tgt, backup, sid } = await oldHistory(dir, url);
  const synced = path.join(dir, 'synced.db');
  const first = await cli(['subscribe', tgt, '--nats', url, '--source', sid]);
  expect(first.status, first.stderr).toBe(0);
  expect((await cli(['sync', src, synced])).status).toBe(0);
  expect(seqOf(tgt)).toBe(3);
  // The source is restored in place, as cp does.
  fs.copyFileSync(backup, src);
  for (const suffix of ['-wal', '-shm']) fs.rmSync(src + suffix, { force: true });
  const pub = await cli(['publish', src, '--nats', url]);
  expect(pub.status, pub.stderr).toBe(0);
  expect(pub.stderr).toMatch(/snapshot at seq 1 .*SEQ_REGRESSED/);
  return { src, tgt, synced, sid };
}

describe('a subscriber of a source restored from an older copy', () => {
  for (const { name, windows, reason } of [
    // Published after each step: batches (1,3] and (3,5]; the first ends at the target's seq 3, with another event there.
    {
      name: 'a batch of the new history ends at its seq',
      windows: [
        [20, 21],
        [22, 2],
      ],
      reason: 'HISTORY_DIVERGED',
    },
    // Batches (1,4] and (4,5]: none ends at the target's seq 3.
    { name: 'no batch of the new history ends at its seq', windows: [[20, 21, 22], [2]], reason: 'SEQ_REGRESSED' },
  ] as const)
    test(`rebuilds from the snapshot at the restored seq where ${name} (${reason}), ending as a synced target does`, async () => {
      const dir = makeDir();
      try {
        const url = nats.server().url;
        const { src, tgt, synced, sid } = await restoredSource(dir, url);
        for (const w of windows) {
          for (const id of w) sqlite3(src, id === 2 ? "UPDATE t SET v='B' WHERE id=2;" : `INSERT INTO t VALUES(${id},'new');`);
          expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
        }
        const r = await cli(['subscribe', tgt, '--nats', url, '--source', sid, '--json']);
        expect(r.status, r.stderr).toBe(0);
        const out = parseJson(r, S.subscribeOutput);
        expect(out.started).toBe('snapshot');
        expect(out.rebuilt).toMatchObject({ reason, targetSeq: 3, snapshotSeq: 1 });
        expect(r.stderr).toContain(reason);
        expect(rows(tgt)).toEqual(rows(src));
        expect(listed(tgt)).toEqual(['1=a', '2=B', '20=new', '21=new', '22=new']);
        // The target synced to the old seq 3 is rebuilt by sync (HISTORY_DIVERGED): the two end alike.
        const s = await cli(['sync', src, synced]);
        expect(s.status, s.stderr).toBe(0);
        expect(rows(synced)).toEqual(rows(tgt));
        expect(seqOf(tgt)).toBe(5);
        const h = await cli(['health', tgt]);
        expect(h.status, h.stdout + h.stderr).toBe(0);
        // It goes on from there: the next subscribe rebuilds nothing.
        const again = parseJson(await cli(['subscribe', tgt, '--nats', url, '--source', sid, '--json']), S.subscribeOutput);
        expect(again.rebuilt).toBeUndefined();
        expect(rows(tgt)).toEqual(rows(src));
      } finally {
        removeDir(dir);
      }
    });
});

/** The source put back from its backup, in place, as cp does (nothing writes to it meanwhile). */
function restore(src: string, backup: string) {
  fs.copyFileSync(backup, src);
  for (const suffix of ['-wal', '-shm']) fs.rmSync(src + suffix, { force: true });
}

/** Writes rows `ids` of the new history (2: row 2 updated), one seq each. */
function newHistory(src: string, ids: readonly number[]) {
  for (const id of ids) sqlite3(src, id === 2 ? "UPDATE t SET v='B' WHERE id=2;" : `INSERT INTO t VALUES(${id},'new');`);
}

/*
 * A follower already running when the restored source's snapshot (at seq 1,
 * below its seq 3) comes. Before, it weighed that snapshot only by the
 * cursor rules, which call a snapshot below the target's seq "behind", so it
 * skipped it: a batch of the new history spanning seq 3 then had its events
 * past seq 3 applied over the old rows (exit 0, health green), and one
 * ending at seq 3 stopped it fail-closed. Now it weighs the snapshot as a
 * subscriber starting then does (streamContinues): it rebuilds from it.
 */
describe('a follower running when a source restored from an older copy is published again', () => {
  // Met as soon as it is published, the snapshot has no batch after it yet that ends at the follower's seq: SEQ_REGRESSED,
  // as a subscriber starting then says. A follower held (SIGSTOP) until the new history is published meets them after it.
  for (const { name, windows, held, reason } of [
    // Published after each step: batch (1,4], spanning the follower's seq 3.
    { name: 'a batch of the new history spans its seq', windows: [[20, 21, 22]], held: false, reason: 'SEQ_REGRESSED' },
    // Batches (1,2], all below its seq, then (2,4], past it.
    { name: 'batches of the new history below its seq, then one past it', windows: [[20], [21, 22]], held: false, reason: 'SEQ_REGRESSED' },
    // Batches (1,3], ending at its seq with another event there, then (3,4].
    // (Here too a follower slow to meet the snapshot may meet it after batch (1,3]: HISTORY_DIVERGED.)
    {
      name: 'a batch of the new history ends at its seq',
      windows: [[20, 21], [22]],
      held: false,
      reason: 'SEQ_REGRESSED|HISTORY_DIVERGED',
    },
    {
      name: 'batches of the new history below its seq, then one past it, met after them',
      windows: [[20], [21, 22]],
      held: true,
      reason: 'SEQ_REGRESSED',
    },
    { name: 'a batch of the new history ends at its seq, met after it', windows: [[20, 21], [22]], held: true, reason: 'HISTORY_DIVERGED' },
  ] as const)
    test(`rebuilds from the snapshot at the restored seq where ${name} (${reason}), ending as a fresh sync of the source`, async () => {
      const dir = makeDir();
      try {
        const url = nats.server().url;
        const { src, tgt, backup, sid } = await oldHistory(dir, url);
        const follower = startCli(['subscribe', tgt, '--nats', url, '--source', sid, '--follow']);
        let exited: { status: number | null } | undefined;
        void follower.exited.then((e) => (exited = e));
        try {
          await waitFor('the follower at seq 3', () => seqOf(tgt) === 3);
          expect(listed(tgt)).toEqual(['1=a', '2=b', '10=old', '11=old']);
          if (held) follower.child.kill('SIGSTOP');
          restore(src, backup);
          const pub = await cli(['publish', src, '--nats', url]);
          expect(pub.stderr).toMatch(/snapshot at seq 1 .*SEQ_REGRESSED/);
          for (const w of windows) {
            newHistory(src, w);
            const p = await cli(['publish', src, '--nats', url]);
            expect(p.status, p.stderr).toBe(0);
          }
          if (held) follower.child.kill('SIGCONT');
          await waitFor('the follower at seq 4, or stopped', () => exited !== undefined || seqOf(tgt) === 4);
          const fresh = path.join(dir, 'fresh.db');
          const s = await cli(['sync', src, fresh]);
          expect(s.status, s.stderr).toBe(0);
          const h = await cli(['health', tgt]);
          expect(rows(tgt), `follower: ${follower.stderr()}\nhealth: ${h.stdout}${h.stderr}`).toEqual(rows(fresh));
          expect(listed(tgt)).toEqual(['1=a', '2=b', '20=new', '21=new', '22=new']);
          expect(exited, follower.stderr()).toBeUndefined();
          expect(follower.stderr()).toMatch(new RegExp(`(${reason}): .*rebuilding from the snapshot at seq 1`));
          expect(h.status, h.stdout + h.stderr).toBe(0);
          // It goes on following the new history.
          newHistory(src, [2]);
          expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
          await waitFor('the follower at seq 5', () => seqOf(tgt) === 5);
          expect(rows(tgt)).toEqual(rows(src));
        } finally {
          follower.child.kill('SIGCONT');
          follower.child.kill('SIGTERM');
        }
        expect((await follower.exited).status, follower.stderr()).toBe(0);
      } finally {
        removeDir(dir);
      }
    });
});

/*
 * A follower that meets a batch of another history at its seq with no
 * snapshot before it (a stream that lost the snapshot published at the
 * restored seq: here the restored source's batch is copied onto it from a
 * stream of another server) stops fail-closed, as import does.
 */
describe('a follower of a source restored from an older copy', () => {
  test('that stops fail-closed (HISTORY_DIVERGED) records it in the target: health exits 3 until a subscribe run rebuilds it, green while that follower runs', async () => {
    const dir = makeDir();
    const other = await NatsServer.start();
    try {
      const url = nats.server().url;
      const { src, tgt, backup, sid } = await oldHistory(dir, url);
      const follower = startCli(['subscribe', tgt, '--nats', url, '--source', sid, '--follow']);
      try {
        await waitFor('the follower at seq 3', () => seqOf(tgt) === 3);
        restore(src, backup);
        // Batch (1,3] of the new history ends at the follower's seq 3, with another event there.
        expect((await cli(['publish', src, '--nats', other.url, '--stream', 'OTHER'])).status).toBe(0);
        newHistory(src, [20, 21]);
        expect((await cli(['publish', src, '--nats', other.url, '--stream', 'OTHER'])).status).toBe(0);
        const batch = (await streamMessages(other.url, 'OTHER')).find((m) => m.subject.endsWith('.batch'));
        if (batch === undefined) throw new Error('no batch on the other stream');
        const headers = Object.fromEntries(
          [...batch.header.keys()].filter((k) => k.startsWith('Sluice-')).map((k) => [k, batch.header.get(k)]),
        );
        await publishRaw(url, batch.subject, Buffer.from(batch.data).toString('utf8'), headers);
        const stopped = await Promise.race([follower.exited, new Promise<undefined>((r) => setTimeout(() => r(undefined), 30_000))]);
        expect(stopped?.status, follower.stderr()).toBe(3);
      } finally {
        follower.child.kill('SIGTERM');
        await follower.exited;
      }
      expect(follower.stderr()).toMatch(/^sluice: HISTORY_DIVERGED/m);
      // The advice is the subscriber run again (below), not a new target.
      expect(follower.stderr()).toMatch(/Run sluice subscribe again/);
      expect(follower.stderr()).not.toMatch(/new target/);
      expect(listed(tgt)).toEqual(['1=a', '2=b', '10=old', '11=old']);
      const h = await cli(['health', tgt]);
      expect(h.status, h.stdout + h.stderr).toBe(3);
      expect(h.stdout + h.stderr).toContain('HISTORY_DIVERGED');
      expect(h.stdout + h.stderr).toMatch(/sluice subscribe/);
      expect(h.stdout + h.stderr).not.toMatch(/new target/);

      // Its publisher publishes a snapshot of the restored source (HISTORY_DIVERGED), and the follower started again
      // rebuilds the target from it; health is green while it runs.
      const pub = await cli(['publish', src, '--nats', url]);
      expect(pub.stderr).toMatch(/snapshot at seq 3 .*HISTORY_DIVERGED/);
      newHistory(src, [22, 2]);
      expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
      const again = startCli(['subscribe', tgt, '--nats', url, '--source', sid, '--follow']);
      try {
        await waitFor('the follower at seq 5', () => seqOf(tgt) === 5);
        expect(again.stderr()).toMatch(/HISTORY_DIVERGED: .*rebuilding from the snapshot at seq 3/);
        expect(rows(tgt)).toEqual(rows(src));
        const after = await cli(['health', tgt]);
        expect(after.status, after.stdout + after.stderr).toBe(0);
      } finally {
        again.child.kill('SIGTERM');
        expect((await again.exited).status, again.stderr()).toBe(0);
      }
    } finally {
      await other.dispose();
      removeDir(dir);
    }
  });
});
