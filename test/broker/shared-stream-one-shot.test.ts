// a one-shot subscribe of a source on a stream another source published to last ends, having applied what its source published
import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { natsForFile, publishOnce, sourceIdOf } from './support/broker.ts';
import { subscribe, type SubscribeReport } from '../../src/broker/index.ts';

/*
 * Two sources publish to one stream (--stream). A subscribe without
 * --follow read until the stream's last message, but its consumer takes
 * only its own source's subjects: when the stream's last message was the
 * other source's, no message it got ever reached it, and it waited for
 * ever. It now reads until its own source's last message.
 */

const nats = natsForFile();
const STREAM = 'SHARED_ONE_SHOT';

/** A one-shot subscribe, or 'hung' if it has not ended within `ms`. */
async function subscribeWithin(target: string, url: string, sourceId: string, ms: number): Promise<SubscribeReport | 'hung'> {
  const stop = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      subscribe(target, url, { sourceId, stream: STREAM, signal: stop.signal }),
      new Promise<'hung'>((resolve) => (timer = setTimeout(() => resolve('hung'), ms))),
    ]);
  } finally {
    clearTimeout(timer);
    stop.abort();
  }
}

describe('a one-shot subscribe on a stream two sources share', () => {
  test("ends when the stream's last message is the other source's, having applied its own source's snapshot and batches", async ({
    makeDb,
    tmp,
  }) => {
    const url = nats.server().url;
    const a = makeDb('a.db', "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');");
    const b = makeDb('b.db', "CREATE TABLE u (id INTEGER PRIMARY KEY, w TEXT); INSERT INTO u VALUES (1, 'x');");
    enable(a.db, ['t']);
    enable(b.db, ['u']);
    a.db.close();
    b.db.close();
    const bid = sourceIdOf(b.file);
    await publishOnce(b.file, url, { stream: STREAM });
    await publishOnce(a.file, url, { stream: STREAM }); // the stream's last message is A's

    const target = path.join(tmp, 'b-target.db');
    const first = await subscribeWithin(target, url, bid, 20_000);
    expect(first).not.toBe('hung');
    expect(first).toMatchObject({ started: 'snapshot' });

    runSqliteCli(b.file, "INSERT INTO u VALUES (2, 'y');");
    await publishOnce(b.file, url, { stream: STREAM });
    runSqliteCli(a.file, "INSERT INTO t VALUES (2, 'b');");
    await publishOnce(a.file, url, { stream: STREAM });
    const second = await subscribeWithin(target, url, bid, 20_000);
    expect(second).not.toBe('hung');
    expect(second).toMatchObject({ started: 'batch', batchesApplied: 1 });
    // Nothing new of B since: it starts at the end and reads nothing.
    const third = await subscribeWithin(target, url, bid, 20_000);
    expect(third).toMatchObject({ started: 'end', batchesApplied: 0 });

    const db = openDatabase(target, { readonly: true });
    expect(db.prepare('SELECT id, w FROM u ORDER BY id').raw().all()).toEqual([
      [1n, 'x'],
      [2n, 'y'],
    ]);
    db.close();
  }, 120_000);
});
