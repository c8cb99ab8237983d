// a window whose message would be over max_payload is cut in proportion to its size: messages fill the budget, stay under it, and apply exactly
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { makeDir, removeDir, runCliAsync, parseJson, dumpTables, syncByLibrary } from '../cli/support/cli.ts';
import { sourceIdOf, streamMessages, defaultStreamName } from './support/broker.ts';
import { NatsServer } from '../support/nats-server.ts';
import { subjectsOf } from '../../src/broker/index.ts';

/*
 * On a server whose max_payload is 64 KiB, a window of 1,000 events of
 * 2 KB rows (about 2 MB of JSONL) cannot go in one message. It is cut in
 * proportion to the larger of its two messages (with a tenth to spare, at
 * most in half), and cut again while still over: each message is under the
 * budget (max_payload less 16 KiB for headers), the windows stay
 * contiguous, and a subscriber of either format applies them to a target
 * equal to a synced one. (Cutting in proportion rather than in half builds a
 * window's messages about twice instead of up to six times: a matter of
 * CPU, not of what is published.) A few wide rows are a segment in 4 KiB
 * pages, not the 1 KiB pages of a few small ones.
 */

let server: NatsServer;
let dir: string;
const MAX_PAYLOAD = 65536;
const BUDGET = MAX_PAYLOAD - 16 * 1024;
beforeAll(async () => {
  server = await NatsServer.start({ config: `max_payload: ${MAX_PAYLOAD}\n` });
  dir = makeDir();
}, 30_000);
afterAll(async () => {
  await server.dispose();
  removeDir(dir);
});

describe('a window over max_payload', () => {
  test('is cut in proportion to its size: messages near the budget and under it, contiguous, applied exactly in both formats', async () => {
    const src = path.join(dir, 'app.db');
    const db = openDatabase(src, { create: true, role: 'test', wal: true });
    try {
      db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)');
      enable(db, ['t']);
    } finally {
      db.close();
    }
    const url = server.url;
    const pub = (args: string[] = []) => runCliAsync(['publish', src, '--nats', url, '--format', 'jsonl,segment', ...args, '--json']);
    expect((await pub()).status).toBe(0);
    const w = openDatabase(src, { role: 'test' });
    try {
      w.transaction(() => {
        const ins = w.prepare('INSERT INTO t (id, body) VALUES (?, ?)');
        for (let i = 1; i <= 1000; i++) ins.run(i, `${String(i).padStart(4, '0')}${'x'.repeat(1996)}`);
      })();
    } finally {
      w.close();
    }
    const r = await pub();
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.publishOutput).events).toBe(1000);

    const sid = sourceIdOf(src);
    const msgs = await streamMessages(url, defaultStreamName(sid));
    for (const format of ['jsonl', 'segment'] as const) {
      const batches = msgs.filter((m) => m.subject === subjectsOf(sid, format).batch);
      const ranges = batches.map((m) => [Number(m.header.get('Sluice-From-Seq')), Number(m.header.get('Sluice-To-Seq'))]);
      expect(ranges[0]?.[0]).toBe(0);
      expect(ranges.at(-1)?.[1]).toBe(1000);
      ranges.slice(1).forEach(([from], i) => expect(from).toBe(ranges[i]?.[1]));
      for (const m of batches) expect(m.data.length).toBeLessThanOrEqual(BUDGET);
    }
    // Cut many times (1,000 events of 2 KB, about 2 MB, in messages of at most 48 KiB).
    expect(msgs.filter((m) => m.subject === subjectsOf(sid, 'segment').batch).length).toBeGreaterThan(20);
    // Rows this wide go in pages of 4 KiB, few as a window's events are (in pages of 1 KiB each would take overflow pages).
    for (const m of msgs.filter((x) => x.subject === subjectsOf(sid, 'segment').batch))
      expect(Buffer.from(m.data).readUInt16BE(16)).toBe(4096);

    expect(await syncByLibrary(src, path.join(dir, 'synced.db'))).toBe(0);
    const synced = dumpTables(path.join(dir, 'synced.db'), ['t']);
    for (const format of ['jsonl', 'segment']) {
      const tgt = path.join(dir, `${format}.db`);
      const s = await runCliAsync(['subscribe', tgt, '--nats', url, '--source', sid, '--format', format, '--json']);
      expect(s.status, s.stderr).toBe(0);
      expect(dumpTables(tgt, ['t'])).toEqual(synced);
    }
  });
});
