// publish then subscribe gives the same target as sync
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython, ROOT } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, dumpTables, sourceSeq, syncByLibrary } from '../cli/support/cli.ts';
import { NatsServer } from '../support/nats-server.ts';
import { natsForFile, sourceIdOf, streamMessages } from './support/broker.ts';
import { defaultStreamName, subjectsOf } from '../../src/broker/index.ts';
import { decodeCursor } from '../../src/feed/index.ts';

/*
 * A source published to a real nats-server and subscribed into a target
 * ends in the same target as sync, for a mirror, a map and an FTS5 index;
 * batches travel as messages with deterministic ids.
 */

const nats = natsForFile();
const PROJECTION_FILES = ['issues-mirror.json', 'open-issues.json', 'issues-search.json'].map((f) => path.join(ROOT, 'projections', f));
const PROJECTIONS = PROJECTION_FILES.flatMap((f) => ['--projection', f]);

const WRITER = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i in range(int(sys.argv[2]), int(sys.argv[2]) + 12):
    con.execute("INSERT INTO issues (repo_id, number, title, body, state, author, score, updated_at) VALUES (1, ?, ?, 'needle body', 'open', 'py', ?, '2026-05-01')", (500 + i, 'python haystack %d' % i, i / 3))
    con.commit()
con.execute("UPDATE issues SET state = 'closed', title = title || ' closed' WHERE repo_id = 2 AND number <= 4")
con.execute("UPDATE issues SET repo_id = 3, number = number + 9000 WHERE repo_id = 1 AND number = 1")
con.execute("DELETE FROM issues WHERE repo_id = 2 AND number BETWEEN 5 AND 6")
con.execute("UPDATE repositories SET description = CAST(x'ff41' AS TEXT), stars = 9223372036854775807 WHERE id = 1")
con.commit()
`;

let dir: string;
let src: string;
let sid: string;
let twin: string;
const at = (f: string) => path.join(dir, f);

/** What the FTS5 index answers: the keys (not the rowids) of the rows each query finds. */
function answers(file: string): Record<string, unknown> {
  const db = openDatabase(file, { readonly: true });
  try {
    const q = (term: string) =>
      db
        .prepare(
          "SELECT s._k0 || '/' || s._k1 FROM issues_search JOIN issues_search_src s ON s.rowid = issues_search.rowid WHERE issues_search MATCH ? ORDER BY 1",
        )
        .pluck()
        .all(term) as string[];
    return { needle: q('needle'), haystack: q('haystack'), closed: q('closed'), python: q('python NOT closed') };
  } finally {
    db.close();
  }
}

/**
 * The target's tables, byte-exact (the fts5 key table with its rowids
 * included), without FTS5's own shadow tables: their pages depend on how the
 * index was built (in how many batches), not on what it holds; answers()
 * compares what it holds.
 */
function rows(file: string): Record<string, string[]> {
  return Object.fromEntries(Object.entries(dumpTables(file)).filter(([t]) => !/^issues_search_(data|idx|docsize|config)$/.test(t)));
}

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'));
  sid = sourceIdOf(src);
  twin = at('twin.db');
  const db = openDatabase(src);
  db.exec(`VACUUM INTO '${twin}'`);
  db.close();
});
afterAll(() => removeDir(dir));

describe('publish -> subscribe', () => {
  test('equals sync for a mirror, a map and an FTS5 index, and the source', async () => {
    const url = nats.server().url;
    const pub = await runCliAsync(['publish', src, '--nats', url, '--batch', '7', '--json']);
    expect(pub.status, pub.stderr).toBe(0);
    const first = parseJson(pub, S.publishOutput);
    expect(first).toMatchObject({
      sourceId: sid,
      stream: defaultStreamName(sid),
      batches: 0,
      snapshots: [{ reason: 'STREAM_HAD_NO_SNAPSHOT', aliases: ['NO_SNAPSHOT_PUBLISHED'] }],
    });
    // Sync snapshots the same state the publisher did, then both get the same events (an external
    // content FTS5 table numbers its rows by arrival, so a later snapshot would number them otherwise).
    // The synced target is the reference: synced through the library the CLI runs (`sluice sync SRC TGT`, exit code 0).
    expect(await syncByLibrary(src, at('synced.db'), PROJECTION_FILES)).toBe(0);
    runPython(WRITER, [src, '0']);
    const [again, synced] = await Promise.all([
      runCliAsync(['publish', src, '--nats', url, '--batch', '7', '--json']),
      syncByLibrary(src, at('synced.db')),
    ]);
    expect(again.status, again.stderr).toBe(0);
    expect(synced).toBe(0);
    const second = parseJson(again, S.publishOutput);
    expect(second).toMatchObject({ seq: sourceSeq(src), snapshots: [] });
    expect(second.events).toBe(sourceSeq(src));

    const sub = await runCliAsync(['subscribe', at('sub.db'), '--nats', url, '--source', sid, ...PROJECTIONS, '--json']);
    expect(sub.status, sub.stderr).toBe(0);
    const rep = parseJson(sub, S.subscribeOutput);
    expect(rep).toMatchObject({ started: 'snapshot', batchesApplied: second.batches, batchesSkipped: 0 });
    expect(rep.projections.map((p) => [p.name, p.state, p.seq]).sort()).toEqual(
      ['issues', 'issues_search', 'open_issues'].map((n) => [n, 'active', sourceSeq(src)]),
    );
    expect(rows(at('sub.db'))).toEqual(rows(at('synced.db')));
    expect(rows(at('sub.db')).issues).toEqual(dumpTables(src, ['issues']).issues);
    expect(answers(at('sub.db'))).toEqual(answers(at('synced.db')));
    expect((answers(at('sub.db')).needle as number[]).length).toBe(12);
  });

  test('a second subscribe applies only what was published since, and one with nothing new applies nothing', async () => {
    const url = nats.server().url;
    runPython(WRITER, [src, '100']);
    const pub = await runCliAsync(['publish', src, '--nats', url, '--batch', '7', '--json']);
    expect(pub.status, pub.stderr).toBe(0);
    const p = parseJson(pub, S.publishOutput);
    expect(await syncByLibrary(src, at('synced.db'))).toBe(0);
    const sub = await runCliAsync(['subscribe', at('sub.db'), '--nats', url, '--source', sid, '--json']);
    expect(sub.status, sub.stderr).toBe(0);
    expect(parseJson(sub, S.subscribeOutput)).toMatchObject({ started: 'batch', batchesApplied: p.batches, batchesSkipped: 0 });
    expect(rows(at('sub.db'))).toEqual(rows(at('synced.db')));
    expect(answers(at('sub.db'))).toEqual(answers(at('synced.db')));

    const idle = await runCliAsync(['subscribe', at('sub.db'), '--nats', url, '--source', sid, '--json']);
    expect(idle.status, idle.stderr).toBe(0);
    expect(parseJson(idle, S.subscribeOutput)).toMatchObject({ started: 'end', batchesApplied: 0, messages: 0 });
  });

  test('batches are messages on the source subject, in fixed seq windows, with the source id, range and history as Nats-Msg-Id', async () => {
    const url = nats.server().url;
    const msgs = await streamMessages(url, defaultStreamName(sid));
    const subjects = subjectsOf(sid);
    const batches = msgs.filter((m) => m.subject === subjects.batch);
    expect(batches.length).toBeGreaterThan(3);
    let prev: number | undefined;
    for (const m of batches) {
      const from = Number(m.header.get('Sluice-From-Seq'));
      const to = Number(m.header.get('Sluice-To-Seq'));
      // The history: the digest of the event the batch's cursor anchors on (the one at its last seq).
      const anchor = (decodeCursor(m.header.get('Sluice-Cursor')).anchor as { seq: number; digest: string }).digest;
      expect(m.header.get('Nats-Msg-Id')).toBe(`${sid}:${from}-${to}:${anchor}`);
      // A window never crosses a multiple of --batch: the same range whoever publishes it, whenever.
      expect(Math.floor((to - 1) / 7)).toBe(Math.floor(from / 7));
      if (prev !== undefined) expect(from).toBe(prev); // contiguous: no gap, no overlap
      prev = to;
      const lines = Buffer.from(m.data).toString('utf8').split('\n');
      expect(lines.pop()).toBe('');
      const marker = JSON.parse(lines.at(-1) as string) as { type: string; count: number; fromSeq: number; seq: number };
      expect(marker).toMatchObject({ type: 'batch', fromSeq: from, seq: to, count: lines.length - 1 });
    }
    expect(prev).toBe(sourceSeq(src));
    expect(msgs.filter((m) => m.subject === subjects.end)).toHaveLength(1);
  });

  test('a twin of the source published to another server with the same writes gets the same windows, with ids of its own history', async () => {
    // The same source (a byte copy taken before anything was published) and the same writes: the windows depend only
    // on the seqs, not on who publishes or when. Its events were written at other times, though: another history of
    // the same source id (as a source restored from an older copy and written again), whose batches a stream must not
    // take for the source's (the broker's dedup would drop them), so their ids differ in their history.
    const other = await NatsServer.start();
    try {
      for (const start of ['0', '100']) {
        if (start !== '0') runPython(WRITER, [twin, start]);
        else {
          const p0 = await runCliAsync(['publish', twin, '--nats', other.url, '--batch', '7', '--json']);
          expect(p0.status, p0.stderr).toBe(0);
          runPython(WRITER, [twin, start]);
        }
        const p = await runCliAsync(['publish', twin, '--nats', other.url, '--batch', '7', '--json']);
        expect(p.status, p.stderr).toBe(0);
      }
      const ids = async (url: string) =>
        (await streamMessages(url, defaultStreamName(sid)))
          .filter((m) => m.subject === subjectsOf(sid).batch)
          .map((m) => m.header.get('Nats-Msg-Id'));
      const mine = await ids(nats.server().url);
      expect(mine.length).toBeGreaterThan(3);
      const theirs = await ids(other.url);
      const range = (id: string | undefined) => /^(.*:\d+-\d+):[0-9a-f]{16}$/.exec(String(id))?.[1];
      expect(theirs.map(range)).toEqual(mine.map(range));
      expect(mine.map(range)).not.toContain(undefined);
      expect(theirs.filter((id) => mine.includes(id))).toEqual([]);
    } finally {
      await other.dispose();
    }
  });
});
