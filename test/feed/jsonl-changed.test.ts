// the changed columns in JSONL: export line format 3, read by import, and lines of format 2 still read
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, ROOT } from '../support/fixtures.ts';
import { enable } from '../../src/capture/index.ts';
import { readBatch, journalStartCursor, eventLineSchema, eventToLine, lineToEvent } from '../../src/feed/index.ts';
import { exportLineSchema, FORMAT_VERSION, isSimpleEventLine } from '../../src/export/index.ts';
import { runCliAsync, expectOneLineError, scalar } from '../cli/support/cli.ts';
import { pythonExec } from '../support/journal.ts';

const SCHEMA = 'CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT, body TEXT, comment_count INTEGER)';
const WRITES = `INSERT INTO issues VALUES (1, 'a', 'alpha', 0), (2, 'b', 'beta', 0);
UPDATE issues SET comment_count = 3 WHERE id = 1;
UPDATE issues SET title = 'B', body = 'BETA' WHERE id = 2;
UPDATE issues SET id = 10 WHERE id = 1;
DELETE FROM issues WHERE id = 2;`;

describe('changed columns in JSONL', () => {
  test('an update line carries changed; a line without it (an older sluice) reads as every column changed', ({ makeDb }) => {
    const { db, file } = makeDb('src.db', SCHEMA);
    enable(db, ['issues']);
    const cursor = journalStartCursor(db);
    pythonExec(file, WRITES);
    const b = readBatch(db, cursor);
    const lines = b.events.map((e) => eventToLine(b.sourceId, e));
    expect(lines.map((l) => [l.op, l.changed])).toEqual([
      ['insert', undefined],
      ['insert', undefined],
      ['update', ['comment_count']],
      ['update', ['title', 'body']],
      ['update', ['id']],
      ['delete', undefined],
    ]);
    expect(lines.filter((l) => l.op !== 'update').every((l) => !('changed' in l))).toBe(true);
    for (const l of lines) {
      const json: unknown = JSON.parse(JSON.stringify(l));
      // The fast path and the schema accept the same lines.
      expect(isSimpleEventLine(json)).toBe(true);
      expect(lineToEvent(eventLineSchema.parse(json))).toEqual(b.events[lines.indexOf(l)]);
    }
    // A line of an older sluice: no changed, which means every column changed.
    const { changed: _, ...old } = lines[2] as (typeof lines)[number];
    const e = lineToEvent(eventLineSchema.parse(old));
    expect(e.op === 'update' && !('changed' in e)).toBe(true);
    // What an older reader does with a new line: its schema was strict, without changed, so it refuses the
    // line; that is why the field came with export line format 3, which it checks first, at the file's first marker.
    const before = eventLineSchema.omit({ changed: true });
    expect(before.safeParse(lines[2]).success).toBe(false);
    expect(before.safeParse(old).success).toBe(true);
    expect(eventLineSchema.safeParse({ ...lines[2], changed: [1] }).success).toBe(false);
  });

  test('export writes format 3 with the changed columns, import reads it, and a format 2 file still imports', async ({ makeDb, tmp }) => {
    const { db, file } = makeDb('src.db', SCHEMA);
    enable(db, ['issues']);
    db.close();
    const out = path.join(tmp, 'out.jsonl');
    const first = await runCliAsync(['export', file, '--out', out]);
    expect(first.status, first.stderr).toBe(0);
    pythonExec(file, WRITES);
    const second = await runCliAsync(['export', file, '--out', out]);
    expect(second.status, second.stderr).toBe(0);
    const parsed = fs
      .readFileSync(out, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => exportLineSchema.parse(JSON.parse(l)));
    expect(parsed.filter((l) => 'v' in l).every((l) => (l as { v: number }).v === FORMAT_VERSION && FORMAT_VERSION === 3)).toBe(true);
    expect(parsed.filter((l) => 'op' in l && l.op === 'update').map((l) => (l as { changed?: string[] }).changed)).toEqual([
      ['comment_count'],
      ['title', 'body'],
      ['id'],
    ]);
    const target = path.join(tmp, 'tgt.db');
    const r = await runCliAsync(['import', target, out]);
    expect(r.status, r.stderr).toBe(0);
    expect(scalar(target, "SELECT group_concat(id || ':' || title || ':' || comment_count, ' ') FROM issues")).toBe('10:a:3');

    const old = await runCliAsync(['import', path.join(tmp, 'old.db'), path.join(ROOT, 'fixtures', 'bad-jsonl', 'good.jsonl')]);
    expect(old.status, old.stderr).toBe(0);
  });

  test('a marker of a later line format is refused at once, naming the formats this sluice reads', async ({ tmp }) => {
    const good = fs.readFileSync(path.join(ROOT, 'fixtures', 'bad-jsonl', 'good.jsonl'), 'utf8');
    const later = path.join(tmp, 'later.jsonl');
    fs.writeFileSync(later, good.replace('"v":2', '"v":4'));
    const r = await runCliAsync(['import', path.join(tmp, 't.db'), later]);
    expect(r.status).toBe(1);
    expectOneLineError(r, 'IMPORT_FORMAT_VERSION');
    expect(r.stderr).toContain('a table line of export format 4; this sluice reads formats 2 and 3');
  });
});
