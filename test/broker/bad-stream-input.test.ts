// bad input on the stream is refused with a reason and nothing is committed
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { LineDigest } from '../../src/export/index.ts';
import {
  runCliAsync,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  dumpTables,
  expectOneLineError,
  scalar,
  sourceSeq,
} from '../cli/support/cli.ts';
import { natsForFile, publishOnce, publishRaw, sourceIdOf, streamMessages } from './support/broker.ts';
import { subscribe, defaultStreamName, subjectsOf } from '../../src/broker/index.ts';

/*
 * Messages on a source's batch subject that sluice did not write as they
 * are (another source's lines, a line that is not an export line, a batch
 * whose lines do not match its digest) are refused by subscribe like the
 * same damage in a file: exit 1 with the code, the stream, the message and
 * the line, and nothing of that batch committed, the target as it was.
 * Once the bad message is gone, the genuine batch applies.
 */

const nats = natsForFile();
let dir: string;
let src: string;
let tgt: string;
let sid: string;
/** The genuine next batch: its event lines and marker, as `export --since` writes them. */
let batch: string[];
const at = (f: string) => path.join(dir, f);

function state(file: string) {
  return { tables: dumpTables(file), seqs: scalar(file, 'SELECT json_group_object(name, seq) FROM main._sluice_projections') };
}

/** A batch message with `lines`, the headers sluice sets, and a fresh digest unless `keepDigest`. */
async function put(lines: string[], keepDigest = false): Promise<void> {
  const marker = JSON.parse(lines.at(-1) as string) as Record<string, unknown>;
  if (!keepDigest) {
    const d = new LineDigest();
    for (const l of lines.slice(0, -1)) d.add(l);
    marker.digest = d.take();
  }
  const body = [...lines.slice(0, -1), JSON.stringify(marker)].map((l) => `${l}\n`).join('');
  await publishRaw(nats.server().url, subjectsOf(sid).batch, body, {
    'Sluice-Source': sid,
    'Sluice-From-Seq': String(marker.fromSeq),
    'Sluice-To-Seq': String(marker.seq),
    'Sluice-Cursor': String(marker.cursor),
  });
}

async function dropLast(): Promise<void> {
  const nc = await connect({ servers: nats.server().url });
  const jsm = await jetstreamManager(nc);
  const info = await jsm.streams.info(defaultStreamName(sid));
  await jsm.streams.deleteMessage(defaultStreamName(sid), info.state.last_seq);
  await nc.close();
}

beforeAll(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues', 'labels']);
  sid = sourceIdOf(src);
  tgt = at('cache.db');
  // Published and subscribed through the library the CLI runs (setup; the bad input below goes through the CLI).
  await publishOnce(src, nats.server().url);
  expect((await subscribe(tgt, nats.server().url, { sourceId: sid })).started).toBe('snapshot');
  // The next batch, written by export from the target's cursor but not published.
  runPython(
    `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("UPDATE issues SET title = 'edited ' || number WHERE repo_id = 1 AND number <= 3")
con.execute("DELETE FROM labels WHERE repo_id = 2")
con.commit()`,
    [src],
  );
  const cursor = String(scalar(tgt, "SELECT cursor FROM main._sluice_projections WHERE name = 'issues'"));
  const r = await runCliAsync(['export', src, '--since', cursor, '--out', at('next.jsonl'), '--json']);
  expect(r.status, r.stderr).toBe(0);
  batch = fs.readFileSync(at('next.jsonl'), 'utf8').trimEnd().split('\n');
  expect(batch.length).toBeGreaterThan(4);
});
afterAll(() => removeDir(dir));

describe('bad input on the stream', () => {
  const cases: Array<[string, string, () => string[], boolean]> = [
    [
      'a batch of another source id',
      'IMPORT_MIXED_SOURCES',
      () => batch.map((l) => l.replaceAll(`"sourceId":"${sid}"`, '"sourceId":"another-source"')),
      false,
    ],
    [
      'a line that is not an export line',
      'IMPORT_MALFORMED_LINE',
      () => batch.map((l, i) => (i === 1 ? '{"seq": "not a line"}' : l)),
      false,
    ],
    ['a line that is not JSON', 'IMPORT_MALFORMED_LINE', () => batch.map((l, i) => (i === 2 ? l.slice(0, 20) : l)), false],
    [
      'an event edited after the digest was taken',
      'IMPORT_BATCH_MISMATCH',
      () => batch.map((l, i) => (i === 0 ? l.replace('edited', 'EDITED') : l)),
      true,
    ],
    ['an event line lost', 'IMPORT_BATCH_MISMATCH', () => batch.filter((_, i) => i !== 1), true],
  ];
  for (const [what, code, lines, keepDigest] of cases) {
    test(`${what} is refused with ${code}, naming the message and line, and the target is as it was`, async () => {
      const before = state(tgt);
      await put(lines(), keepDigest);
      try {
        const r = await runCliAsync(['subscribe', tgt, '--nats', nats.server().url, '--source', sid]);
        expect(r.status, r.stderr).toBe(1);
        expectOneLineError(r, code);
        expect(r.stderr).toMatch(new RegExp(`stream ${defaultStreamName(sid)} message \\d+ line \\d+`));
        expect(state(tgt)).toEqual(before);
      } finally {
        await dropLast();
      }
    });
  }

  test('the genuine batch then applies, and the target equals the source', async () => {
    await put(batch, true);
    const r = await runCliAsync(['subscribe', tgt, '--nats', nats.server().url, '--source', sid, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.subscribeOutput)).toMatchObject({ started: 'batch', batchesApplied: 1 });
    expect(dumpTables(tgt)).toEqual(dumpTables(src, ['issues', 'labels']));
    expect(JSON.parse(String(state(tgt).seqs))).toEqual({ issues: sourceSeq(src), labels: sourceSeq(src) });
    expect((await streamMessages(nats.server().url, defaultStreamName(sid))).length).toBeGreaterThan(1);
  });
});
