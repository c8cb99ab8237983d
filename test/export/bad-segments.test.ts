// a segment is untrusted: import refuses an edited, truncated, foreign or extended one, naming the file and the rule, with nothing committed
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { EDIT, exportSnapshotThenEvents, segmentsOf } from './support/segment-files.ts';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, dumpTables, scalar } from '../cli/support/cli.ts';

/*
 * A target holds a source's snapshot (imported from its first segment);
 * the source's next segment (its events) is then damaged one way at a
 * time, by another program (Python's sqlite3, or a byte cut), and each
 * copy is imported: each must fail with its reason code and the file's
 * name, and leave the target exactly as it was. The undamaged segment then
 * imports.
 */

const WRITER = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i in range(5):
    con.execute("INSERT INTO issues (repo_id, number, title, body, state, author, score, updated_at) VALUES (1, ?, 'py', NULL, 'open', 'py', 1.5, '2026-05-01')", (900 + i,))
    con.commit()
con.execute("UPDATE labels SET color = x'' WHERE repo_id = 1")
con.commit()
`;

let dir: string;
let target: string;
let good: string;
let before: Record<string, string[]>;
let seqs: unknown;
const at = (f: string) => path.join(dir, f);

/** A copy of the good events segment, edited by `sql` through Python's sqlite3. */
function edited(name: string, sql: string): string {
  const f = at(`${name}.segment`);
  fs.copyFileSync(good, f);
  runPython(EDIT, [f, sql]);
  return f;
}

/** The events table of a table with events (segment_events_<tno>). */
function eventsTable(): string {
  return `segment_events_${String(scalar(good, 'SELECT min(tno) FROM segment_tables WHERE events > 0'))}`;
}

beforeAll(async () => {
  dir = makeDir();
  const src = trackerSource(at('app.db'));
  await exportSnapshotThenEvents(src, at('segs'), WRITER);
  const [snap, events] = segmentsOf(at('segs')) as [string, string];
  good = events;
  target = at('target.db');
  const r3 = await runCliAsync(['import', target, snap]);
  expect(r3.status, r3.stderr).toBe(0);
  before = dumpTables(target);
  seqs = scalar(target, 'SELECT json_group_object(name, seq) FROM main._sluice_projections');
});
afterAll(() => removeDir(dir));

async function refused(file: string, code: string): Promise<void> {
  const r = await runCliAsync(['import', target, file]);
  expect(r.status, r.stderr).not.toBe(0);
  expect(r.stderr).toContain(code);
  expect(r.stderr).toContain(path.basename(file));
  expect(dumpTables(target)).toEqual(before);
  expect(scalar(target, 'SELECT json_group_object(name, seq) FROM main._sluice_projections')).toEqual(seqs);
}

describe('import refuses a damaged segment, nothing committed', () => {
  test('an extra table', async () => {
    await refused(edited('extra-table', 'CREATE TABLE extra (x);'), 'IMPORT_SEGMENT_SCHEMA');
  });
  test('a view', async () => {
    await refused(edited('view', 'CREATE VIEW v AS SELECT * FROM segment_batches;'), 'IMPORT_SEGMENT_SCHEMA');
  });
  test('a trigger', async () => {
    await refused(edited('trigger', 'CREATE TRIGGER tr AFTER INSERT ON segment_batches BEGIN SELECT 1; END;'), 'IMPORT_SEGMENT_SCHEMA');
  });
  test('an index', async () => {
    await refused(edited('index', 'CREATE INDEX ix ON segment_batches (events);'), 'IMPORT_SEGMENT_SCHEMA');
  });
  test('a table of the wire schema made with other columns', async () => {
    const t = eventsTable();
    await refused(edited('other-columns', `ALTER TABLE ${t} ADD COLUMN extra;`), 'IMPORT_SEGMENT_SCHEMA');
  });
  test('a truncated file', async () => {
    const f = at('truncated.segment');
    const bytes = fs.readFileSync(good);
    fs.writeFileSync(f, bytes.subarray(0, bytes.length - 4096));
    await refused(f, 'IMPORT_SEGMENT_TRUNCATED');
  });
  test('bytes appended', async () => {
    const f = at('appended.segment');
    fs.writeFileSync(f, Buffer.concat([fs.readFileSync(good), Buffer.from('more')]));
    await refused(f, 'IMPORT_SEGMENT_TRUNCATED');
  });
  test('a journal beside it', async () => {
    const f = at('journal.segment');
    fs.copyFileSync(good, f);
    fs.writeFileSync(`${f}-journal`, 'not a journal');
    await refused(f, 'IMPORT_SEGMENT_TRUNCATED');
  });
  test('an edited value: its digest differs', async () => {
    const t = eventsTable();
    await refused(edited('digest', `UPDATE ${t} SET ts = ts + 1 WHERE seq = (SELECT min(seq) FROM ${t});`), 'IMPORT_SEGMENT_DIGEST');
  });
  test('a count in its meta edited', async () => {
    await refused(edited('count', "UPDATE segment SET value = value + 1 WHERE name = 'events';"), 'IMPORT_SEGMENT_MISMATCH');
  });
  test('an event moved out of its batches', async () => {
    const t = eventsTable();
    await refused(
      edited('moved', `UPDATE ${t} SET seq = seq + 1000000 WHERE seq = (SELECT max(seq) FROM ${t});`),
      'IMPORT_SEGMENT_MISMATCH',
    );
  });
  test('another wire version', async () => {
    await refused(edited('version', 'PRAGMA user_version = 2;'), 'IMPORT_SEGMENT_VERSION');
  });
  test('a SQLite file that is not a segment', async () => {
    const f = at('plain.segment');
    runPython(EDIT, [f, 'CREATE TABLE t (x);']);
    await refused(f, 'IMPORT_SEGMENT_SCHEMA');
  });
  test('a segment of another source', async () => {
    const other = trackerSource(at('other.db'));
    await exportSnapshotThenEvents(other, at('other-segs'), WRITER);
    const events = segmentsOf(at('other-segs'))[1] as string;
    const f = at('other-source.segment');
    fs.copyFileSync(events, f);
    await refused(f, 'SOURCE_CHANGED');
  });
  test('a folder mixing two sources', async () => {
    const mixed = at('mixed');
    fs.mkdirSync(mixed);
    fs.copyFileSync(good, path.join(mixed, path.basename(good)));
    const other = segmentsOf(at('other-segs'))[1] as string;
    fs.copyFileSync(other, path.join(mixed, `x${path.basename(other)}`));
    const r = await runCliAsync(['import', target, mixed]);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('IMPORT_MIXED_SOURCES');
    expect(dumpTables(target)).toEqual(before);
  });
  test('the undamaged segment imports', async () => {
    const r = await runCliAsync(['import', target, good]);
    expect(r.status, r.stderr).toBe(0);
    expect(dumpTables(target)).not.toEqual(before);
  });
});
