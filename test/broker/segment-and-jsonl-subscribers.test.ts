// one publisher of both formats, a subscriber on JSONL and one on segments: both end byte-identical to a synced target
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, dumpTables, sourceSeq, syncByLibrary } from '../cli/support/cli.ts';
import { natsForFile, sourceIdOf, streamMessages } from './support/broker.ts';
import { defaultStreamName, subjectsOf } from '../../src/broker/index.ts';

/*
 * `publish --format jsonl,segment` to a real nats-server writes each batch
 * window twice, on the JSONL subject and on the segment subject, with one
 * JSONL snapshot for both; a subscriber on each format (a fresh target from
 * the snapshot, then again for what was published since) ends byte-identical
 * to a target synced from the source.
 */

const nats = natsForFile();

const WRITER = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i in range(int(sys.argv[2]), int(sys.argv[2]) + 12):
    con.execute("INSERT INTO issues (repo_id, number, title, body, state, author, score, updated_at) VALUES (1, ?, ?, 'needle body', 'open', 'py', ?, '2026-05-01')", (500 + i, 'python %d' % i, i / 3))
    con.commit()
con.execute("UPDATE issues SET state = 'closed', title = title || ' closed' WHERE repo_id = 2 AND number <= 4")
con.execute("UPDATE issues SET repo_id = 3, number = number + 9000 + ? WHERE repo_id = 1 AND number = 1", (int(sys.argv[2]),))
con.execute("DELETE FROM issues WHERE repo_id = 2 AND number BETWEEN 5 AND 6")
con.execute("UPDATE repositories SET description = CAST(x'ff41' AS TEXT), stars = 9223372036854775807 WHERE id = 1")
con.execute("UPDATE labels SET color = x'' WHERE repo_id = 1")
con.commit()
`;

let dir: string;
let src: string;
let sid: string;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'));
  sid = sourceIdOf(src);
});
afterAll(() => removeDir(dir));

async function subscribed(target: string, format: string) {
  const r = await runCliAsync(['subscribe', target, '--nats', nats.server().url, '--source', sid, '--format', format, '--json']);
  expect(r.status, r.stderr).toBe(0);
  return parseJson(r, S.subscribeOutput);
}

describe('publish --format jsonl,segment -> a subscriber on each', () => {
  test('both subscribers equal the synced target, from the snapshot and then from their cursors', async () => {
    const url = nats.server().url;
    const pub = await runCliAsync(['publish', src, '--nats', url, '--batch', '7', '--format', 'jsonl,segment', '--json']);
    expect(pub.status, pub.stderr).toBe(0);
    runPython(WRITER, [src, '0']);
    const again = await runCliAsync(['publish', src, '--nats', url, '--batch', '7', '--format', 'jsonl,segment', '--json']);
    expect(again.status, again.stderr).toBe(0);
    const p = parseJson(again, S.publishOutput);
    expect(p.events).toBe(sourceSeq(src));
    expect(await syncByLibrary(src, at('synced.db'))).toBe(0);

    const j = await subscribed(at('jsonl.db'), 'jsonl');
    const s = await subscribed(at('segment.db'), 'segment');
    for (const r of [j, s]) expect(r).toMatchObject({ started: 'snapshot', batchesApplied: p.batches, batchesSkipped: 0 });
    const synced = dumpTables(at('synced.db'));
    expect(dumpTables(at('jsonl.db'))).toEqual(synced);
    expect(dumpTables(at('segment.db'))).toEqual(synced);

    runPython(WRITER, [src, '100']);
    const third = await runCliAsync(['publish', src, '--nats', url, '--batch', '7', '--format', 'jsonl,segment', '--json']);
    expect(third.status, third.stderr).toBe(0);
    expect(await syncByLibrary(src, at('synced.db'))).toBe(0);
    const j2 = await subscribed(at('jsonl.db'), 'jsonl');
    const s2 = await subscribed(at('segment.db'), 'segment');
    for (const r of [j2, s2]) expect(r).toMatchObject({ started: 'batch', batchesApplied: parseJson(third, S.publishOutput).batches });
    const now = dumpTables(at('synced.db'));
    expect(now).not.toEqual(synced);
    expect(dumpTables(at('jsonl.db'))).toEqual(now);
    expect(dumpTables(at('segment.db'))).toEqual(now);
    expect(dumpTables(src, Object.keys(now))).toEqual(now);
  });

  test('each window is one message per format, on its own subject, with its own Nats-Msg-Id; the snapshot is published once', async () => {
    const msgs = await streamMessages(nats.server().url, defaultStreamName(sid));
    const jsonl = msgs.filter((m) => m.subject === subjectsOf(sid).batch);
    const segments = msgs.filter((m) => m.subject === subjectsOf(sid, 'segment').batch);
    expect(segments.length).toBe(jsonl.length);
    expect(jsonl.length).toBeGreaterThan(2);
    expect(msgs.filter((m) => m.subject === subjectsOf(sid).end)).toHaveLength(1);
    for (const m of segments) expect(Buffer.from(m.data).subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0');
    // Windows of at most 7 events: written in pages of 1 KiB (the page size is bytes 16-17 of the header).
    for (const m of segments) expect(Buffer.from(m.data).readUInt16BE(16)).toBe(1024);
    expect(fs.existsSync(at('segment.db'))).toBe(true);
  });
});
