// a publisher or subscriber killed mid run resumes with no gap and no event applied twice
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { decodeCursor } from '../../src/feed/index.ts';
import {
  runCliAsync,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  dumpTables,
  startCli,
  waitFor,
  scalar,
  sourceSeq,
  projectionSeq,
} from '../cli/support/cli.ts';
import { natsForFile, publishOnce, publishRaw, sourceIdOf, streamMessages } from './support/broker.ts';
import { defaultStreamName, subjectsOf } from '../../src/broker/index.ts';

/*
 * SIGKILL at a random point, then run again: a publisher resumes after the
 * last batch the broker acknowledged, so the stream's batches are
 * contiguous with no range twice; a subscriber resumes from its target's
 * cursor, so every event is applied exactly once (the mirror's
 * applied_events counts them) and the target equals the source.
 */

const nats = natsForFile();
const EVENTS = 3000;
let dir: string;
let src: string;
let sid: string;
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['comments']);
  sid = sourceIdOf(src);
  // The snapshot first (at seq 0), then a backlog of events to publish as batches.
  await publishOnce(src, nats.server().url, { batchSeqs: 3 });
  runPython(
    `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i in range(${EVENTS}):
    con.execute("UPDATE comments SET body = body || ? WHERE id = ?", (str(i % 10), 1 + i % 500))
con.commit()`,
    [src],
  );
});
afterAll(() => removeDir(dir));

/** The seq the publisher has recorded as acknowledged (0 before its state file exists). */
function published(): number {
  try {
    return decodeCursor(fs.readFileSync(`${src}.publish-${defaultStreamName(sid)}.cursor`, 'utf8').trim()).seq;
  } catch {
    return 0;
  }
}

describe('killed mid-run', () => {
  test('a publisher killed three times and run again leaves every seq in the stream once, in contiguous batches', async () => {
    const url = nats.server().url;
    // A kill lands some milliseconds after the poll saw the point: the publisher may have published the rest meanwhile
    // (the last share leaves a few hundred events). The last publish must be exact either way; at least one kill must
    // have landed mid-run for the test to mean what it says (as for the subscriber below).
    let midRun = 0;
    // How far the stream's batches reach: the publisher's output, which each round must move on (its state file, which
    // times the kill, is written behind the acknowledgements and may lag them when the kill lands).
    const reach = async () => {
      const batches = (await streamMessages(url, defaultStreamName(sid))).filter((m) => m.subject === subjectsOf(sid).batch);
      return Math.max(0, ...batches.map((m) => Number(m.header.get('Sluice-To-Seq'))));
    };
    for (const share of [0.15, 0.4, 0.7]) {
      const start = await reach();
      if (start >= EVENTS) break; // (a kill that landed after the end leaves nothing to kill mid-run)
      // The state file is the last round's until this round's publisher writes it: behind the stream, never ahead of it.
      expect(published(), `the state file before round ${share}, against the stream's batches`).toBeLessThanOrEqual(start);
      const p = startCli(['publish', src, '--nats', url, '--batch', '3']);
      // A random point past `share` of the backlog, before the end, and past where the stream reaches: the last kill may
      // have landed far past its own point (the file only shows what reached it, at most every 100 ms), and a file left at
      // or past this round's point would end the poll at once, killing this publisher before it had started.
      const at = Math.max(Math.floor(EVENTS * (share + Math.random() * 0.1)), start + 1);
      let seen = -1;
      let why = '';
      const t0 = Date.now();
      await waitFor(
        `the publisher past seq ${at}`,
        () => {
          const v = published();
          seen = Math.max(seen, v);
          if (v >= at) why = `file ${v}`;
          if (p.child.exitCode !== null) why += ` exit ${p.child.exitCode}`;
          return v >= at || p.child.exitCode !== null;
        },
        60_000,
        2,
      );
      why += ` after ${Date.now() - t0} ms, at ${at}, seen ${seen}`;
      p.child.kill('SIGKILL');
      const ex = await p.exited;
      const now = await reach();
      expect(now, `${JSON.stringify(ex)} state file at seq ${published()}, ${why}, out=${p.stdout()} err=${p.stderr()}`).toBeGreaterThan(
        start,
      );
      if (now < EVENTS) midRun++;
    }
    expect(midRun).toBeGreaterThan(0);
    const last = await runCliAsync(['publish', src, '--nats', url, '--batch', '3', '--json']);
    expect(last.status, last.stderr).toBe(0);
    const out = parseJson(last, S.publishOutput);
    expect(out.seq).toBe(sourceSeq(src));
    expect(out.snapshots).toEqual([]);

    const batches = (await streamMessages(url, defaultStreamName(sid))).filter((m) => m.subject === subjectsOf(sid).batch);
    const ranges = batches.map((m) => [Number(m.header.get('Sluice-From-Seq')), Number(m.header.get('Sluice-To-Seq'))] as const);
    expect(new Set(batches.map((m) => m.header.get('Nats-Msg-Id'))).size).toBe(batches.length);
    let prev = 0;
    for (const [from, to] of ranges) {
      expect(from, `the batch after seq ${prev}`).toBe(prev);
      prev = to;
    }
    expect(prev).toBe(EVENTS);
  }, 120_000);

  test('a subscriber killed three times and run again applies every event once and equals the source', async () => {
    const url = nats.server().url;
    const tgt = at('cache.db');
    // A kill lands some milliseconds after the poll saw the point: the subscriber may have applied the rest meanwhile (the
    // last share leaves 600 events, a few ms of work). The final subscribe must be exact either way; at least one kill must
    // have landed mid-run for the test to mean what it says.
    let midRun = 0;
    for (const share of [0.15, 0.4, 0.7]) {
      // Where the last round's kill left the target (it may have landed far past its point): this round's point is past it,
      // so the poll waits for this round's subscriber, and a round counts as mid-run only when its subscriber moved it.
      const before = projectionSeq(tgt, 'comments');
      if (before >= EVENTS) break;
      const s = startCli(['subscribe', tgt, '--nats', url, '--source', sid]);
      const point = Math.max(Math.floor(EVENTS * (share + Math.random() * 0.1)), before + 1);
      await waitFor(
        `the subscriber past seq ${point}`,
        () => projectionSeq(tgt, 'comments') >= point || s.child.exitCode !== null,
        60_000,
        2,
      );
      s.child.kill('SIGKILL');
      await s.exited;
      const after = projectionSeq(tgt, 'comments');
      expect(after, s.stderr()).toBeGreaterThanOrEqual(point);
      if (after > before && after < EVENTS) midRun++;
    }
    expect(midRun).toBeGreaterThan(0);
    // It resumes from its cursor: at a batch, or at the stream's end when the last kill came after the last batch.
    const resumedAt = projectionSeq(tgt, 'comments');
    const r = await runCliAsync(['subscribe', tgt, '--nats', url, '--source', sid, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.subscribeOutput)).toMatchObject({ started: resumedAt < EVENTS ? 'batch' : 'end', batchesSkipped: 0 });
    expect(projectionSeq(tgt, 'comments')).toBe(EVENTS);
    expect(scalar(tgt, "SELECT applied_events FROM main._sluice_projections WHERE name = 'comments'")).toBe(BigInt(EVENTS));
    expect(dumpTables(tgt)).toEqual(dumpTables(src, ['comments']));
  }, 120_000);

  test('a batch the stream holds twice (a copy past the dedup window) is applied once: the copy is skipped by the cursor', async () => {
    const url = nats.server().url;
    const tgt = at('cache.db');
    runPython(
      `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i in range(5):
    con.execute("UPDATE comments SET body = body || 'x' WHERE id = ?", (1 + i,))
    con.commit()`,
      [src],
    );
    expect((await runCliAsync(['publish', src, '--nats', url, '--batch', '3'])).status).toBe(0);
    const batches = (await streamMessages(url, defaultStreamName(sid))).filter((m) => m.subject === subjectsOf(sid).batch);
    const copy = batches.at(-2);
    expect(copy?.header.get('Sluice-From-Seq')).toBe(String(EVENTS));
    const headers = Object.fromEntries(
      ['Sluice-Source', 'Sluice-From-Seq', 'Sluice-To-Seq', 'Sluice-Cursor'].map((h) => [h, copy?.header.get(h) ?? '']),
    );
    await publishRaw(url, subjectsOf(sid).batch, Buffer.from(copy?.data ?? []).toString('utf8'), headers);
    const r = await runCliAsync(['subscribe', tgt, '--nats', url, '--source', sid, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.subscribeOutput)).toMatchObject({ started: 'batch', batchesApplied: 2, batchesSkipped: 1, messages: 3 });
    expect(scalar(tgt, "SELECT applied_events FROM main._sluice_projections WHERE name = 'comments'")).toBe(BigInt(EVENTS + 5));
    expect(dumpTables(tgt)).toEqual(dumpTables(src, ['comments']));
  });
});
