// the changes cli prints lossless jsonl and a cursor to continue
import { test, expect, describe, runCli } from '../support/fixtures.ts';
import { openDatabase, fromJsonValue, type SqlValue } from '../../src/sqlite/index.ts';
import { enable, status } from '../../src/capture/index.ts';
import {
  readBatch,
  journalStartCursor,
  eventLineSchema,
  cursorLineSchema,
  eventToLine,
  type EventLine,
  decodeCursor,
} from '../../src/feed/index.ts';
import { canon } from './support/replay.ts';

function parseOutput(stdout: string): { events: EventLine[]; cursor: string } {
  expect(stdout.endsWith('\n')).toBe(true);
  const lines = stdout.trimEnd().split('\n');
  const last = lines.pop() as string;
  const events = lines.map((l) => eventLineSchema.parse(JSON.parse(l)));
  // The cursor line is not an event line, and every event line is not a cursor line.
  expect(eventLineSchema.safeParse(JSON.parse(last)).success).toBe(false);
  return { events, cursor: cursorLineSchema.parse(JSON.parse(last)).cursor };
}

function seedSource(makeDb: (name?: string, schema?: string) => { file: string; db: ReturnType<typeof openDatabase> }) {
  const { db, file } = makeDb(
    'src.db',
    'CREATE TABLE t (id INTEGER PRIMARY KEY, v, b BLOB); CREATE TABLE u (k TEXT PRIMARY KEY NOT NULL, w)',
  );
  enable(db, ['t', 'u']);
  const ins = db.prepare('INSERT INTO t (id, v, b) VALUES (?, ?, ?)');
  ins.run(1, 9223372036854775807n, Buffer.alloc(0));
  ins.run(2, 1.0, Buffer.from([0, 255]));
  ins.run(3, -0.1, null);
  db.prepare('INSERT INTO t (id, v) VALUES (4, CAST(? AS TEXT))').run(Buffer.from([0x68, 0xff, 0x69]));
  db.exec(`
    INSERT INTO u VALUES ('a', 'x'), ('b', NULL);
    UPDATE t SET v = '' WHERE id = 3;
    UPDATE t SET id = 40 WHERE id = 4;
    DELETE FROM t WHERE id = 2;
    UPDATE u SET w = -9223372036854775808 WHERE k = 'a';
  `);
  return { db, file };
}

describe('sluice changes', () => {
  test('after a mode change it starts after the re-arm: old keys-mode events are never printed in the images layout', ({ makeDb }) => {
    const { db, file } = makeDb('m.db', "CREATE TABLE t (id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'a')");
    enable(db, ['t'], { mode: 'keys' });
    db.exec("UPDATE t SET v = 'b' WHERE id = 1; INSERT INTO t VALUES (2, 'c')");
    enable(db, ['t'], { mode: 'images' });
    db.exec("UPDATE t SET v = 'd' WHERE id = 2");
    db.close();
    const r = runCli(['changes', file]);
    expect(r.status).toBe(0);
    const { events } = parseOutput(r.stdout);
    expect(events.map((e) => [e.op, e.key])).toEqual([['update', [2]]]);
  });

  test('prints one schema-valid line per event, then {cursor}; --since continues with no gap or overlap', ({ makeDb }) => {
    const { db, file } = seedSource(makeDb);
    const sourceId = status(db).sourceId;
    const expected = readBatch(db, journalStartCursor(db), { limit: 1000 }).events;
    expect(expected).toHaveLength(10);
    db.close();

    const seen: EventLine[] = [];
    const pages: { events: EventLine[]; cursor: string }[] = [];
    let since: string | undefined;
    // Pages of 5 over 10 events: 5, 5, then an empty page once caught up.
    for (let page = 0; page < 10; page++) {
      const r = runCli(['changes', file, '--limit', '5', ...(since === undefined ? [] : ['--since', since])]);
      expect(r.status, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
      const out = parseOutput(r.stdout);
      expect(out.events.length).toBeLessThanOrEqual(5);
      pages.push(out);
      seen.push(...out.events);
      since = out.cursor;
      if (out.events.length < 5) break;
    }
    expect(pages.map((p) => p.events.length)).toEqual([5, 5, 0]);
    expect(seen.map((e) => e.seq)).toEqual(expected.map((e) => e.seq));
    expect(seen.every((e) => e.sourceId === sourceId)).toBe(true);
    // The lines are exactly the library's events in the documented encoding.
    expect(seen).toEqual(expected.map((e) => JSON.parse(JSON.stringify(eventToLine(sourceId as string, e))) as EventLine));
    // And they decode back to the exact values (int64, REAL 1.0, empty BLOB, malformed TEXT).
    for (const [i, line] of seen.entries()) {
      const e = expected[i]!;
      for (const image of ['before', 'after'] as const) {
        const got = line[image];
        const want = e[image];
        expect(got === null, `${e.seq} ${image}`).toBe(want === null);
        if (got === null || want === null) continue;
        for (const [col, v] of Object.entries(want))
          expect(canon(fromJsonValue(got[col])), `${e.seq} ${image}.${col}`).toBe(canon(v as SqlValue));
      }
    }
    // Caught up: the last page has only the cursor line, at the same position as the page before.
    expect(decodeCursor(pages[2]!.cursor).seq).toBe(decodeCursor(pages[1]!.cursor).seq);
  });

  test('--table keeps only the named tables', ({ makeDb }) => {
    const { db, file } = seedSource(makeDb);
    db.close();
    const r = runCli(['changes', file, '--table', 'u']);
    expect(r.status, r.stderr).toBe(0);
    const { events, cursor } = parseOutput(r.stdout);
    expect(events.map((e) => [e.op, e.table, e.key])).toEqual([
      ['insert', 'u', ['a']],
      ['insert', 'u', ['b']],
      ['update', 'u', ['a']],
    ]);
    expect(events[2]?.after).toEqual({ k: 'a', w: { $i: '-9223372036854775808' } });
    expect(decodeCursor(cursor).tables).toEqual(['u']);
    const unknown = runCli(['changes', file, '--table', 'nope']);
    expect(unknown.status).toBe(3);
    expect(unknown.stderr).toMatch(/^sluice: TABLE_UNTRACKED: /);
  });
});

describe('sluice prune', () => {
  test('deletes entries past the retention now, and a cursor behind them must rebuild (exit 3)', ({ makeDb }) => {
    const { db, file } = makeDb('p.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    enable(db, ['t'], { retention: 1024 });
    const old = journalStartCursor(db);
    const upsert = db.prepare('INSERT INTO t (id, v) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET v = excluded.v');
    db.transaction(() => {
      for (let i = 1; i <= 3000; i++) upsert.run(i % 7, i);
    })();
    // Writers pruned last at seq 2992 (through 1968); on demand prunes through 3000 - 1024.
    expect(status(db).prunedThrough).toBe(2992 - 1024);
    db.close();
    const r = runCli(['prune', file, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ deleted: 3000 - 2992, prunedThrough: 3000 - 1024 });
    const again = runCli(['prune', file]);
    expect(again.status).toBe(0);
    expect(again.stdout).toMatch(/deleted 0 journal entries; pruned through seq 1976/);
    const check = openDatabase(file, { readonly: true });
    expect(status(check)).toMatchObject({ prunedThrough: 1976, journalRows: 1024, seq: 3000 });
    check.close();
    const behind = runCli(['changes', file, '--since', old]);
    expect(behind.status).toBe(3);
    expect(behind.stderr).toMatch(/^sluice: CURSOR_PRUNED: /);
  });

  test('on a database without capture it exits 3 with CAPTURE_ABSENT', ({ makeDb }) => {
    const { db, file } = makeDb('n.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY)');
    db.close();
    const r = runCli(['prune', file]);
    expect(r.status).toBe(3);
    expect(r.stderr).toMatch(/^sluice: CAPTURE_ABSENT: /);
  });
});
