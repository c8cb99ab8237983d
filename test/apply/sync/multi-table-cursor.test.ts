// a target whose cursors list several tables (an import, a subscribe) then synced from its source: each projection reads its own table
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { decodeCursor } from '../../../src/feed/index.ts';
import { runCliAsync, runCliOk, makeDir, removeDir, dumpTables, scalar, sourceSeq } from '../../cli/support/cli.ts';
import { natsForFile, sourceIdOf } from '../../broker/support/broker.ts';

/*
 * An import of an export (JSONL or segments) and a subscribe write each
 * projection the cursor of the stream they read, which lists every table
 * the stream carries ("t": ["a", "b"]). A later `sluice sync SRC TGT`
 * must read each projection's batches from the projection's own table:
 * reading the first table of the cursor for every projection gave b the
 * rows of a (exit 0, health 0) where the two tables have the same columns,
 * and a PROJECTION_OUTDATED refusal naming a's columns, run after run,
 * where they differ. The target ends as a fresh sync of the source, verify
 * passes, and each cursor sync writes names only its projection's table.
 */

const SAME = {
  schema:
    "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE b (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO a VALUES (1, 'a1'); INSERT INTO b VALUES (1, 'b1');",
  writes: [
    "INSERT INTO a VALUES (2, 'a2'); INSERT INTO b VALUES (3, 'b3');",
    "UPDATE b SET v = 'b1x' WHERE id = 1; INSERT INTO a VALUES (4, 'a4');",
  ],
};
const DIFFERENT = {
  schema:
    "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE b (id INTEGER PRIMARY KEY, w INTEGER, note TEXT); INSERT INTO a VALUES (1, 'a1'); INSERT INTO b VALUES (1, 10, 'b1');",
  writes: [
    "INSERT INTO a VALUES (2, 'a2'); INSERT INTO b VALUES (3, 30, 'b3');",
    "UPDATE b SET w = 11 WHERE id = 1; DELETE FROM a WHERE id = 1; INSERT INTO b VALUES (5, 50, 'b5');",
  ],
};

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeAll(() => {
  dir = makeDir('sluice-multi-cursor-');
});
afterAll(() => removeDir(dir));

/** The tables the cursor of projection `name` in `tgt` lists. */
function cursorTables(tgt: string, name: string): readonly string[] {
  return decodeCursor(String(scalar(tgt, 'SELECT cursor FROM main._sluice_projections WHERE name = ?', name))).tables;
}

/** A source with tables a and b captured, from `schema` written by the sqlite3 CLI. */
async function source(name: string, schema: string): Promise<string> {
  const src = at(`${name}.db`);
  runSqliteCli(src, schema);
  await runCliOk(['enable', src, 'a', 'b']);
  return src;
}

/** Writes each of `writes` by the sqlite3 CLI and syncs after it: each sync exits 0, and the target is a fresh sync of the source. */
async function writeAndSync(name: string, src: string, tgt: string, writes: readonly string[]): Promise<void> {
  for (const [i, sql] of writes.entries()) {
    runSqliteCli(src, sql);
    const r = await runCliAsync(['sync', src, tgt]);
    expect(r.status, `sync ${i + 1}: ${r.stdout}${r.stderr}`).toBe(0);
    expect(r.stderr).not.toContain('PROJECTION_OUTDATED');
    const fresh = at(`${name}-fresh-${i}.db`);
    await runCliOk(['sync', src, fresh]);
    expect(dumpTables(tgt), `after sync ${i + 1}`).toEqual(dumpTables(fresh));
    expect(dumpTables(tgt, ['a', 'b'])).toEqual(dumpTables(src, ['a', 'b']));
  }
  const seq = sourceSeq(src);
  for (const p of ['a', 'b']) {
    expect(Number(scalar(tgt, 'SELECT seq FROM main._sluice_projections WHERE name = ?', p))).toBe(seq);
    expect(cursorTables(tgt, p)).toEqual([p]);
  }
  const v = await runCliAsync(['verify', src, tgt]);
  expect(v.status, v.stdout + v.stderr).toBe(0);
  const h = await runCliAsync(['health', tgt]);
  expect(h.status, h.stdout + h.stderr).toBe(0);
}

describe('an imported target synced from its source', () => {
  for (const format of ['jsonl', 'segment'] as const) {
    for (const [columns, pair] of [
      ['the same', SAME],
      ['different', DIFFERENT],
    ] as const) {
      test(`${format} import, two tables with ${columns} columns: each projection syncs from its own table`, async () => {
        const name = `${format}-${columns === 'the same' ? 'same' : 'diff'}`;
        const src = await source(name, pair.schema);
        const out = at(format === 'jsonl' ? `${name}.jsonl` : `${name}-segs`);
        await runCliOk(['export', src, '--out', out, ...(format === 'segment' ? ['--format', 'segment'] : [])]);
        const tgt = at(`${name}-target.db`);
        await runCliOk(['import', tgt, out]);
        // The import's cursors list both tables (a cursor's schema digest covers all its tables, so it is kept as the stream made it).
        expect(cursorTables(tgt, 'b')).toEqual(['a', 'b']);
        await writeAndSync(name, src, tgt, pair.writes);
      });
    }
  }
});

describe('a subscribed target synced from its source', () => {
  const nats = natsForFile();
  for (const [columns, pair] of [
    ['the same', SAME],
    ['different', DIFFERENT],
  ] as const) {
    test(`subscribe, two tables with ${columns} columns: each projection syncs from its own table`, async () => {
      const name = `nats-${columns === 'the same' ? 'same' : 'diff'}`;
      const src = await source(name, pair.schema);
      const url = nats.server().url;
      const stream = `MULTI_${columns === 'the same' ? 'SAME' : 'DIFF'}`;
      await runCliOk(['publish', src, '--nats', url, '--stream', stream]);
      const tgt = at(`${name}-target.db`);
      await runCliOk(['subscribe', tgt, '--nats', url, '--stream', stream, '--source', sourceIdOf(src)]);
      expect(cursorTables(tgt, 'b')).toEqual(['a', 'b']);
      await writeAndSync(name, src, tgt, pair.writes);
    });
  }
});

describe('an imported target whose other table is taken off capture', () => {
  test('b is not suspended for a (TABLE_UNTRACKED of b, which is captured): it is rebuilt once and goes on from a cursor of its own', async () => {
    const src = await source('disabled', SAME.schema);
    const out = at('disabled.jsonl');
    await runCliOk(['export', src, '--out', out]);
    const tgt = at('disabled-target.db');
    await runCliOk(['import', tgt, out]);
    await runCliOk(['disable', src, 'a']);
    runSqliteCli(src, "INSERT INTO b VALUES (3, 'b3'); UPDATE b SET v = 'b1x' WHERE id = 1;");
    const r = await runCliAsync(['sync', src, tgt]);
    // a is suspended (its table is not captured), so sync exits 3; b is not.
    expect(r.status, r.stdout + r.stderr).toBe(3);
    expect(r.stdout).toMatch(/^b: rebuilt \(SCHEMA_CHANGED\)/m);
    const state = (name: string) =>
      scalar(tgt, "SELECT state || coalesce(' ' || reason, '') FROM main._sluice_projections WHERE name = ?", name);
    expect(state('a')).toBe('suspended TABLE_UNTRACKED');
    expect(state('b')).toBe('active');
    expect(dumpTables(tgt, ['b'])).toEqual(dumpTables(src, ['b']));
    expect(cursorTables(tgt, 'b')).toEqual(['b']);
    runSqliteCli(src, "DELETE FROM b WHERE id = 3; INSERT INTO b VALUES (4, 'b4');");
    const again = await runCliAsync(['sync', src, tgt]);
    expect(again.stdout).toMatch(/^b: applied 2 events/m);
    expect(dumpTables(tgt, ['b'])).toEqual(dumpTables(src, ['b']));
  });
});
