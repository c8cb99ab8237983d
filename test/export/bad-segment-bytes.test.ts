// a segment held in memory (a broker's message) is checked as a file is: each damaged copy is refused with its rule and its name, nothing committed
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { EDIT, exportSnapshotThenEvents, importChecked, segmentsOf } from './support/segment-files.ts';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { checkSegmentBytes } from '../../src/export/index.ts';
import { SluiceError } from '../../src/errors.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, dumpTables, scalar } from '../cli/support/cli.ts';

/*
 * The corpus of bad-segments.test.ts, as bytes: a subscriber checks a small
 * segment message in memory (checkSegmentBytes) and never writes it to a
 * file. Every damage a file is refused for is refused the same way, naming
 * the message; a whole segment of another source reaches the target's
 * check and is refused there, leaving the target as it was.
 */

const WRITER = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i in range(5):
    con.execute("INSERT INTO issues (repo_id, number, title, body, state, author, score, updated_at) VALUES (1, ?, 'py', NULL, 'open', 'py', 1.5, '2026-05-01')", (900 + i,))
    con.commit()
`;

let dir: string;
let target: string;
let good: Buffer;
const at = (f: string) => path.join(dir, f);

/** Two segments of a new tracker source in `name`: its snapshot's, then its events'. */
async function exported(name: string): Promise<[string, string]> {
  const src = trackerSource(at(`${name}.db`));
  await exportSnapshotThenEvents(src, at(name), WRITER);
  return segmentsOf(at(name)) as [string, string];
}

/** The good events segment's bytes, edited by `sql` through Python's sqlite3. */
function edited(name: string, sql: string): Buffer {
  const f = at(`${name}.segment`);
  fs.writeFileSync(f, good);
  runPython(EDIT, [f, sql]);
  return fs.readFileSync(f);
}

function refusedBytes(label: string, bytes: Uint8Array, code: string): void {
  let caught: unknown;
  try {
    checkSegmentBytes(label, bytes);
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(SluiceError);
  expect((caught as SluiceError).code).toBe(code);
  expect((caught as Error).message).toContain(label);
}

beforeAll(async () => {
  dir = makeDir();
  const [snap, events] = await exported('segs');
  good = fs.readFileSync(events);
  target = at('target.db');
  const r = await runCliAsync(['import', target, snap]);
  expect(r.status, r.stderr).toBe(0);
});
afterAll(() => removeDir(dir));

describe('a segment in memory is checked as a file is', () => {
  /** The events table of a table with events (segment_events_<tno>). */
  const events = () => {
    const f = at('good.segment');
    fs.writeFileSync(f, good);
    return `segment_events_${String(scalar(f, 'SELECT min(tno) FROM segment_tables WHERE events > 0'))}`;
  };
  test('the good one passes, and is kept open for reading', () => {
    const c = checkSegmentBytes('message 1', good);
    expect(c.image).toBeDefined();
    expect(c.file).toBe('message 1');
    c.image?.close();
  });
  test('an extra table, a view, a trigger, an index', () => {
    refusedBytes('message 2', edited('extra', 'CREATE TABLE extra (x);'), 'IMPORT_SEGMENT_SCHEMA');
    refusedBytes('message 3', edited('view', 'CREATE VIEW v AS SELECT * FROM segment_batches;'), 'IMPORT_SEGMENT_SCHEMA');
    refusedBytes(
      'message 4',
      edited('trigger', 'CREATE TRIGGER tr AFTER INSERT ON segment_batches BEGIN SELECT 1; END;'),
      'IMPORT_SEGMENT_SCHEMA',
    );
    refusedBytes('message 5', edited('index', 'CREATE INDEX ix ON segment_batches (events);'), 'IMPORT_SEGMENT_SCHEMA');
  });
  test('cut short, bytes appended, not a SQLite file at all', () => {
    refusedBytes('message 6', good.subarray(0, good.length - 1024), 'IMPORT_SEGMENT_TRUNCATED');
    refusedBytes('message 7', Buffer.concat([good, Buffer.from('more')]), 'IMPORT_SEGMENT_TRUNCATED');
    refusedBytes('message 8', Buffer.from('{"type":"batch"}\n'), 'IMPORT_SEGMENT_TRUNCATED');
    // A whole header, pages that do not read: SQLite's error, named as the message's.
    const garbled = Buffer.from(good);
    garbled.fill(0xa5, 100, 1024);
    refusedBytes('message 9', garbled, 'IMPORT_SEGMENT_TRUNCATED');
  });
  test('an edited value, an edited count, another wire version', () => {
    const t = events();
    refusedBytes(
      'message 10',
      edited('digest', `UPDATE ${t} SET ts = ts + 1 WHERE seq = (SELECT min(seq) FROM ${t});`),
      'IMPORT_SEGMENT_DIGEST',
    );
    refusedBytes('message 11', edited('count', "UPDATE segment SET value = value + 1 WHERE name = 'events';"), 'IMPORT_SEGMENT_MISMATCH');
    refusedBytes('message 12', edited('version', 'PRAGMA user_version = 2;'), 'IMPORT_SEGMENT_VERSION');
  });
  test('a segment of another source: refused at the target, nothing committed', async () => {
    const before = dumpTables(target);
    const [, otherEvents] = await exported('other');
    const c = checkSegmentBytes('message 13', fs.readFileSync(otherEvents));
    await expect(importChecked(target, c)).rejects.toMatchObject({ code: 'SOURCE_CHANGED' });
    expect(dumpTables(target)).toEqual(before);
  });
  test('the good one imports, read from memory', async () => {
    const before = dumpTables(target);
    const c = checkSegmentBytes('message 14', good);
    const r = await importChecked(target, c);
    expect(r.batchesApplied).toBeGreaterThan(0);
    expect(dumpTables(target)).not.toEqual(before);
  });
});
