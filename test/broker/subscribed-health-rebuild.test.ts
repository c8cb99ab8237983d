// health of a subscribed target says when its next subscribe rebuilds it, as a synced one's does, and counts no replaced history as lag
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { makeDir, removeDir, runCliAsync, parseJson } from '../cli/support/cli.ts';
import { natsForFile, sourceIdOf } from './support/broker.ts';

/*
 * health of a subscribed target read only the seq its stream reaches. After
 * the source re-armed a table (enable --exclude secret) and publish put a
 * snapshot that does not continue the target's cursor (TABLE_REARMED,
 * purging the messages before it), health said "ok t active seq 0 lag 0
 * events", exit 0, with no word that the target still holds every value of
 * the column now left out and that its next subscribe rebuilds it; a synced
 * twin's health says so (".. the next sluice sync rebuilds it by itself").
 * And a target subscribed to a source restored from an older copy
 * (SEQ_REGRESSED) was "lag 0" before its subscriber rebuilt it, where a
 * synced one is a problem (it holds changes the source does not have), and
 * "lag 3 events" once rebuilt and current: the old history's batches, still
 * in the stream, were counted. Health now plans the next subscribe as the
 * subscriber does (planStart) and says what the synced case says.
 */

const nats = natsForFile();
const sqlite3 = (file: string, sql: string) => execFileSync('sqlite3', [file, sql], { encoding: 'utf8' });
const cli = (args: readonly string[]) => runCliAsync(args);

async function health(tgt: string, ...flags: string[]) {
  const r = await cli(['health', tgt, '--json', ...flags]);
  const text = await cli(['health', tgt, ...flags]);
  const h = parseJson(r, S.healthOutput).projections.find((p) => p.name === 't');
  return { status: r.status, text: text.stdout, h };
}

describe('health of a subscribed target', () => {
  test('whose stream holds a snapshot that does not continue it (TABLE_REARMED): no lag 0, the next subscribe rebuilds it, as a synced twin says', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = path.join(dir, 'src.db');
      const sub = path.join(dir, 'sub.db');
      const syn = path.join(dir, 'syn.db');
      sqlite3(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v, secret); INSERT INTO t VALUES(1,'a','TOPSECRET1'),(2,'b','TOPSECRET2');");
      expect((await cli(['enable', src, 't'])).status).toBe(0);
      const sid = sourceIdOf(src);
      expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
      expect((await cli(['subscribe', sub, '--nats', url, '--source', sid])).status).toBe(0);
      expect((await cli(['sync', src, syn])).status).toBe(0);
      expect((await health(sub)).h).toMatchObject({ lagEvents: 0, rebuild: null });

      expect((await cli(['enable', src, 't', '--exclude', 'secret'])).status).toBe(0);
      const pub = await cli(['publish', src, '--nats', url]);
      expect(pub.status, pub.stderr).toBe(0);
      expect(pub.stderr).toMatch(/TABLE_REARMED/);

      const synced = await health(syn);
      const subscribed = await health(sub);
      expect(synced.h).toMatchObject({ rebuild: 'TABLE_REARMED', lagEvents: null, needsAction: false });
      expect(subscribed.status, subscribed.text).toBe(synced.status);
      expect(subscribed.h).toMatchObject({ rebuild: 'TABLE_REARMED', lagEvents: null, lagMs: null, needsAction: false });
      expect(subscribed.text).not.toMatch(/lag 0 events/);
      expect(subscribed.text).toContain('.. the next sluice subscribe rebuilds it by itself (TABLE_REARMED)');

      // A lag that cannot be known is not within a bound, as for the synced twin.
      const bounded = await health(sub, '--max-lag-events', '1000');
      expect(bounded.status).toBe(3);
      expect(bounded.h?.problems.join('\n')).toMatch(
        /the lag of t is not known, so it is not within --max-lag-events 1000: .*TABLE_REARMED.*sluice subscribe/,
      );
      expect((await health(syn, '--max-lag-events', '1000')).status).toBe(3);

      // Once subscribe rebuilt it: current, nothing more said.
      const again = await cli(['subscribe', sub, '--nats', url, '--source', sid]);
      expect(again.status, again.stderr).toBe(0);
      expect(sqlite3(sub, "SELECT count(*) FROM pragma_table_info('t') WHERE name = 'secret'").trim()).toBe('0');
      const after = await health(sub);
      expect(after.status, after.text).toBe(0);
      expect(after.h).toMatchObject({ lagEvents: 0, rebuild: null, needsAction: false });
      expect(after.text).not.toContain('rebuilds it');
    } finally {
      removeDir(dir);
    }
  });

  test('of a source restored from an older copy (SEQ_REGRESSED): a problem until subscribe rebuilds it, then lag 0, the old history not counted', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = path.join(dir, 'src.db');
      const sub = path.join(dir, 'sub.db');
      const syn = path.join(dir, 'syn.db');
      const backup = path.join(dir, 'backup.db');
      sqlite3(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES(1,'a');");
      expect((await cli(['enable', src, 't'])).status).toBe(0);
      const sid = sourceIdOf(src);
      sqlite3(src, "INSERT INTO t VALUES(2,'b');"); // seq 1
      sqlite3(src, 'PRAGMA wal_checkpoint(TRUNCATE);');
      fs.copyFileSync(src, backup);
      // Its first snapshot, at seq 1: the old history goes out in a batch, which the stream keeps after the restore.
      expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
      sqlite3(src, "INSERT INTO t VALUES(10,'old'); INSERT INTO t VALUES(11,'old'); INSERT INTO t VALUES(12,'old');"); // seq 2 to 4
      expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
      expect((await cli(['subscribe', sub, '--nats', url, '--source', sid])).status).toBe(0);
      expect((await cli(['sync', src, syn])).status).toBe(0);
      fs.copyFileSync(backup, src);
      for (const suffix of ['-wal', '-shm']) fs.rmSync(src + suffix, { force: true });
      const pub = await cli(['publish', src, '--nats', url]);
      expect(pub.stderr).toMatch(/snapshot at seq 1 .*SEQ_REGRESSED/);

      const synced = await health(syn);
      const subscribed = await health(sub);
      expect(synced.status).toBe(3);
      expect(synced.h).toMatchObject({ rebuild: 'SEQ_REGRESSED', needsAction: true });
      expect(subscribed.status, subscribed.text).toBe(3);
      expect(subscribed.h).toMatchObject({ rebuild: 'SEQ_REGRESSED', lagEvents: null, needsAction: true });
      expect(subscribed.h?.problems.join('\n')).toMatch(
        /SEQ_REGRESSED: .*holds changes the source does not have: the next sluice subscribe rebuilds it by itself/,
      );

      const again = await cli(['subscribe', sub, '--nats', url, '--source', sid, '--json']);
      expect(parseJson(again, S.subscribeOutput).rebuilt).toMatchObject({ reason: 'SEQ_REGRESSED', snapshotSeq: 1 });
      const rebuilt = await health(sub);
      expect(rebuilt.status, rebuilt.text).toBe(0);
      expect(rebuilt.h).toMatchObject({ seq: 1, sourceSeq: 1, lagEvents: 0, lagMs: 0, rebuild: null });

      // The new history's first batch: one event behind, not the old history's.
      sqlite3(src, "INSERT INTO t VALUES(20,'new');");
      expect((await cli(['publish', src, '--nats', url])).status).toBe(0);
      const behind = await health(sub);
      expect(behind.h).toMatchObject({ seq: 1, sourceSeq: 2, lagEvents: 1, rebuild: null });
    } finally {
      removeDir(dir);
    }
  });
});
