// a source's purge of a shared stream (a column newly left out of capture) removes its own messages only, not another source's
import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { runCliAsync } from '../cli/support/cli.ts';
import { natsForFile, sourceIdOf, streamMessages } from './support/broker.ts';

/*
 * Two sources publish to one stream (--stream SHARED). Source A leaves a
 * column out of capture and is re-armed with one more left out: its next
 * publish publishes a snapshot that starts a new position and purges what
 * came before it, which may hold the column's values. The purge took every
 * message of the stream before that snapshot, source B's snapshot and
 * batches with them: a new subscriber of B failed BROKER_NO_SNAPSHOT, and a
 * subscriber of B that was behind lost the batches it needed. It now takes
 * only source A's subjects (every format's).
 */

const nats = natsForFile();

describe('a purge of a stream two sources share', () => {
  test("takes only the re-armed source's messages: the other source's snapshot and batches stay, its subscribers go on", async ({
    makeDb,
    tmp,
  }) => {
    const url = nats.server().url;
    const cli = async (...args: string[]) => {
      const r = await runCliAsync(args);
      expect(r.status, `sluice ${args.join(' ')}: ${r.stderr}`).toBe(0);
      return r;
    };
    const a = makeDb('a.db', "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, secret TEXT); INSERT INTO t VALUES (1, 'a', 's1');");
    const b = makeDb('b.db', "CREATE TABLE u (id INTEGER PRIMARY KEY, w TEXT); INSERT INTO u VALUES (1, 'x');");
    a.db.close();
    b.db.close();
    await cli('enable', a.file, 't', '--exclude', 'secret');
    await cli('enable', b.file, 'u');
    const [aid, bid] = [sourceIdOf(a.file), sourceIdOf(b.file)];
    await cli('publish', a.file, '--nats', url, '--stream', 'SHARED', '--format', 'jsonl,segment');
    await cli('publish', b.file, '--nats', url, '--stream', 'SHARED');
    // A subscriber of B, then B's next batch, which it has not applied yet.
    const behind = path.join(tmp, 'behind.db');
    await cli('subscribe', behind, '--nats', url, '--stream', 'SHARED', '--source', bid);
    runSqliteCli(b.file, "INSERT INTO u VALUES (2, 'y');");
    await cli('publish', b.file, '--nats', url, '--stream', 'SHARED');

    await cli('enable', a.file, 't', '--exclude', 'secret,v');
    const pub = await cli('publish', a.file, '--nats', url, '--stream', 'SHARED', '--format', 'jsonl,segment');

    // B's messages are all there; A's before its new snapshot are gone (both formats'), the ones from it on stay.
    const messages = await streamMessages(url, 'SHARED');
    const of = (sid: string) => messages.filter((m) => m.header?.get('Sluice-Source') === sid);
    expect(of(bid).map((m) => m.subject.split('.').slice(2).join('.'))).toEqual(['snapshot.part', 'snapshot.end', 'batch']);
    const aEnds = of(aid).filter((m) => m.subject.endsWith('.snapshot.end'));
    expect(aEnds).toHaveLength(1);
    const aStart = Number(aEnds[0]?.header.get('Sluice-Snapshot-Start'));
    expect(of(aid).every((m) => m.seq >= aStart)).toBe(true);
    expect(messages.map((m) => Buffer.from(m.data).toString('utf8')).join('\n')).not.toContain('s1');

    // A new subscriber of B starts from B's snapshot; the one behind goes on with B's batch (no rebuild).
    const fresh = path.join(tmp, 'fresh.db');
    await cli('subscribe', fresh, '--nats', url, '--stream', 'SHARED', '--source', bid);
    const went = await cli('subscribe', behind, '--nats', url, '--stream', 'SHARED', '--source', bid, '--json');
    expect(went.stderr).not.toContain('SUBSCRIBER_BEHIND_STREAM');
    expect(JSON.parse(went.stdout)).toMatchObject({ started: 'batch', batchesApplied: 1 });
    for (const t of [fresh, behind]) {
      const db = openDatabase(t, { readonly: true });
      expect(db.prepare('SELECT id, w FROM u ORDER BY id').raw().all(), t).toEqual([
        [1n, 'x'],
        [2n, 'y'],
      ]);
      db.close();
    }
    // What publish said names the source whose messages it purged.
    expect(pub.stderr).toMatch(/purged the \d+ messages of source .* in stream SHARED/);
  });
});
