// changes --columns and updatesSince's columns: only updates that changed a named column, plus inserts, deletes and key changes
import { test, expect, describe, runCli } from '../support/fixtures.ts';
import type { Db } from '../../src/sqlite/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { readBatch, journalStartCursor, updatesSince, eventLineSchema } from '../../src/feed/index.ts';
import { copyOldFixture } from '../support/old-fixture.ts';
import { pythonExec } from '../support/journal.ts';

const SCHEMA = 'CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT, body TEXT, comment_count INTEGER)';

/** Seeds the source; returns a cursor from before the writes. */
function seed(db: Db, file: string): string {
  enable(db, ['issues']);
  const cursor = journalStartCursor(db);
  pythonExec(
    file,
    `INSERT INTO issues VALUES (1, 'a', 'alpha', 0), (2, 'b', 'beta', 0);
     UPDATE issues SET comment_count = comment_count + 1 WHERE id = 1;
     UPDATE issues SET comment_count = comment_count + 1 WHERE id = 1;
     UPDATE issues SET title = 'A' WHERE id = 1;
     UPDATE issues SET body = 'BETA', comment_count = 5 WHERE id = 2;
     UPDATE issues SET comment_count = 6 WHERE id = 2;
     UPDATE issues SET id = 20 WHERE id = 2;
     UPDATE issues SET comment_count = 7 WHERE id = 20;
     DELETE FROM issues WHERE id = 1;`,
  );
  return cursor;
}

const shape = (db: Db, cursor: string, columns?: string[], limit?: number) => {
  const out: unknown[] = [];
  let at = cursor;
  for (;;) {
    const b = readBatch(db, at, { ...(columns === undefined ? {} : { columns }), ...(limit === undefined ? {} : { limit }) });
    out.push(...b.events.map((e) => [e.op, e.key, e.op === 'update' ? e.changed : null]));
    at = b.to;
    if (!b.hasMore) return out;
  }
};

describe('column filter', () => {
  test('readBatch keeps inserts, deletes, key changes and the updates of the named columns, page by page', ({ makeDb }) => {
    const { db, file } = makeDb('src.db', SCHEMA);
    const cursor = seed(db, file);
    expect(shape(db, cursor)).toHaveLength(10);
    const want = [
      ['insert', [1n], null],
      ['insert', [2n], null],
      ['update', [1n], ['title']],
      ['update', [2n], ['body', 'comment_count']],
      ['update', [20n], ['id']],
      ['delete', [1n], null],
    ];
    expect(shape(db, cursor, ['title', 'body'])).toEqual(want);
    // Paged, the same events, and the last page's cursor is at the high-water mark.
    expect(shape(db, cursor, ['TITLE', 'body'], 2)).toEqual(want);
    expect(shape(db, cursor, ['comment_count'])).toHaveLength(9);
    const b = readBatch(db, cursor, { columns: ['title'] });
    expect(b.toSeq).toBe(Number(db.prepare('SELECT max(seq) FROM _sluice_journal').pluck().get()));
  });

  test('updatesSince yields only rows whose changes since the cursor touched a named column', ({ makeDb }) => {
    const { db, file } = makeDb('src.db', SCHEMA);
    const cursor = seed(db, file);
    const afterInserts = readBatch(db, cursor, { limit: 2 }).to;
    const rows = (columns?: string[]) =>
      [...updatesSince(db, 'issues', afterInserts, columns === undefined ? {} : { columns })].map((c) => [c.pks, c.deleted]);
    expect(rows()).toEqual([
      [[2n], true],
      [[20n], false],
      [[1n], true],
    ]);
    // Only comment_count moved on 20 after its key change; the key change itself is still a change of rows 2 and 20.
    expect(rows(['title'])).toEqual([
      [[2n], true],
      [[20n], false],
      [[1n], true],
    ]);
    pythonExec(file, "INSERT INTO issues VALUES (3, 'c', 'gamma', 0)");
    const next = [...updatesSince(db, 'issues', afterInserts, { columns: ['title'] })].at(-1)?.cursor as string;
    pythonExec(file, "UPDATE issues SET comment_count = 9 WHERE id = 3; UPDATE issues SET body = 'x' WHERE id = 20");
    expect([...updatesSince(db, 'issues', next, { columns: ['title'] })]).toEqual([]);
    expect([...updatesSince(db, 'issues', next, { columns: ['body'] })].map((c) => c.pks)).toEqual([[20n]]);
  });

  test('an unknown column is refused, naming the table and its columns', ({ makeDb }) => {
    const { db, file } = makeDb('src.db', SCHEMA);
    const cursor = seed(db, file);
    const message = 'Table issues has no column titel; its columns are id, title, body, comment_count.';
    expect(() => readBatch(db, cursor, { columns: ['titel'] })).toThrow(message);
    expect(() => [...updatesSince(db, 'issues', cursor, { columns: ['titel'] })]).toThrow(message);
    expect(() => [...updatesSince(db, 'issues', undefined, { columns: ['titel'] })]).toThrow(message);
    expect(() => readBatch(db, cursor, { columns: [] })).toThrow('names no column');
  });

  test('sluice changes --columns prints the filtered lines, each update with its changed columns; an unknown name exits 1', ({
    makeDb,
  }) => {
    const { db, file } = makeDb('src.db', SCHEMA);
    seed(db, file);
    db.close();
    const r = runCli(['changes', file, '--table', 'issues', '--columns', 'title,body']);
    expect(r.status, r.stderr).toBe(0);
    const lines = r.stdout.trimEnd().split('\n').slice(0, -1);
    expect(lines.map((l) => eventLineSchema.parse(JSON.parse(l))).map((e) => [e.op, e.changed])).toEqual([
      ['insert', undefined],
      ['insert', undefined],
      ['update', ['title']],
      ['update', ['body', 'comment_count']],
      ['update', ['id']],
      ['delete', undefined],
    ]);
    const bad = runCli(['changes', file, '--columns', 'title,nope']);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('UNKNOWN_COLUMN');
    expect(bad.stderr).toContain('Table issues has no column nope; its columns are id, title, body, comment_count.');
  });

  test('an update journaled before masks (a format 2 source not upgraded yet) passes every filter', ({ tmp }) => {
    const { source } = copyOldFixture('round2', tmp, []);
    const db = openDatabase(source, { readonly: true });
    try {
      const cursor = journalStartCursor(db, ['notes']);
      const all = readBatch(db, cursor).events;
      expect(all.some((e) => e.op === 'update')).toBe(true);
      expect(readBatch(db, cursor, { columns: ['n'] }).events).toEqual(all);
    } finally {
      db.close();
    }
  });
});
