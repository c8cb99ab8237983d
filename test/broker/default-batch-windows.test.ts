// publish's default batch window: 1,000 seqs with JSONL, 10,000 when only segments are published
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir } from '../cli/support/cli.ts';
import { defaultStreamName, natsForFile, sourceIdOf, streamMessages } from './support/broker.ts';
import { subjectsOf } from '../../src/broker/index.ts';

/*
 * A backlog goes out in fixed seq windows. Without --batch, a publisher of
 * segments alone cuts them at multiples of 10,000 (a segment message costs
 * its subscriber an attach, a check and a transaction of its own, so fewer,
 * larger ones fan out faster: docs/broker.md); one that publishes JSONL, alone
 * or beside segments, at multiples of 1,000; --batch still decides when given.
 */

const nats = natsForFile();
const EVENTS = 25_000;

let dir: string;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
});
afterAll(() => removeDir(dir));

/** A captured source `name` whose journal holds EVENTS inserts after the snapshot its stream starts with (published here, at seq 0). */
async function backlog(name: string): Promise<string> {
  const src = at(name);
  const db = openDatabase(src, { create: true, role: 'test', wal: true });
  try {
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
    enable(db, ['t']);
    const r = await runCliAsync(['publish', src, '--nats', nats.server().url, '--json']);
    expect(r.status, r.stderr).toBe(0);
    db.transaction(() => {
      const ins = db.prepare('INSERT INTO t (id, v) VALUES (?, ?)');
      for (let i = 1; i <= EVENTS; i++) ins.run(i, `row ${i}`);
    })();
  } finally {
    db.close();
  }
  return src;
}

/** Publishes the backlog of `src` with `args`, and returns the seq ranges of its batch messages on `format`'s subject. */
async function ranges(src: string, format: 'jsonl' | 'segment', args: string[]): Promise<[number, number][]> {
  const url = nats.server().url;
  const sid = sourceIdOf(src);
  const r = await runCliAsync(['publish', src, '--nats', url, ...args, '--json']);
  expect(r.status, r.stderr).toBe(0);
  expect(parseJson(r, S.publishOutput).events).toBe(EVENTS);
  return (await streamMessages(url, defaultStreamName(sid)))
    .filter((m) => m.subject === subjectsOf(sid, format).batch)
    .map((m) => [Number(m.header.get('Sluice-From-Seq')), Number(m.header.get('Sluice-To-Seq'))]);
}

const windows = (span: number, to: number): [number, number][] =>
  Array.from({ length: Math.ceil(to / span) }, (_, i) => [i * span, Math.min((i + 1) * span, to)]);

describe("publish's batch windows without --batch", () => {
  test('segments alone: windows of 10,000 seqs; JSONL, alone or beside segments: 1,000; --batch decides when given', async () => {
    expect(await ranges(await backlog('seg.db'), 'segment', ['--format', 'segment'])).toEqual(windows(10_000, EVENTS));
    expect(await ranges(await backlog('jsonl.db'), 'jsonl', [])).toEqual(windows(1000, EVENTS));
    expect(await ranges(await backlog('both.db'), 'segment', ['--format', 'jsonl,segment'])).toEqual(windows(1000, EVENTS));
    expect(await ranges(await backlog('given.db'), 'segment', ['--format', 'segment', '--batch', '4000'])).toEqual(windows(4000, EVENTS));
  });
});
