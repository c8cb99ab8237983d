// every rebuild condition comes from a real scenario with its reason code
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { test, expect, describe, runSqliteCli, runPython } from '../support/fixtures.ts';
import { openDatabase, type Db } from '../../src/sqlite/index.ts';
import { enable, disable, bump, openSource, rearmCapture } from '../../src/capture/index.ts';
import {
  snapshot,
  readBatch,
  journalStartCursor,
  changedSince,
  cursorContinues,
  validateCursor,
  type CursorValidation,
  decodeCursor,
  encodeCursor,
} from '../../src/feed/index.ts';
import { takeCopy } from '../support/restore.ts';
import { FailClosedError } from '../../src/errors.ts';

const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE other (id INTEGER PRIMARY KEY, w)';

function cursorOf(db: Db, tables: readonly string[] = ['t']): string {
  return snapshot(db, tables, { onRow: () => {} }).cursor;
}

function write(db: Db, n: number, from = 1): void {
  const ins = db.prepare('INSERT INTO t (id, v) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET v = excluded.v');
  db.transaction(() => {
    for (let i = from; i < from + n; i++) ins.run(i, `v${i}-${Math.random()}`);
  })();
}

/** Asserts the cursor must rebuild for `reason`, and that every reader agrees (fails closed). */
function expectRebuild(db: Db, cursor: string, reason: string): Extract<CursorValidation, { status: 'rebuild' }> {
  const v = validateCursor(db, cursor);
  expect(v.status).toBe('rebuild');
  if (v.status !== 'rebuild') throw new Error('unreachable');
  expect(v.reason).toBe(reason);
  expect(v.message.length).toBeGreaterThan(20);
  let thrown: unknown;
  try {
    readBatch(db, cursor);
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(FailClosedError);
  expect((thrown as FailClosedError).code).toBe(reason);
  expect((thrown as FailClosedError).exitCode).toBe(3);
  expect((thrown as FailClosedError).detail).toEqual({ ...v.detail, rebuild: reason });
  expect(changedSince(db, cursor)).toEqual({ changed: true, rebuild: reason });
  return v;
}

describe('a cursor must rebuild, with a stable reason code, when', () => {
  test('capture was disabled and enabled again (a new source id): SOURCE_CHANGED', ({ makeDb }) => {
    const { db } = makeDb('a.db', SCHEMA);
    enable(db, ['t']);
    write(db, 3);
    const cursor = cursorOf(db);
    expect(validateCursor(db, cursor).status).toBe('ok');
    disable(db);
    expectRebuild(db, cursor, 'CAPTURE_ABSENT');
    enable(db, ['t']);
    const v = expectRebuild(db, cursor, 'SOURCE_CHANGED');
    expect(v.message).toContain(decodeCursor(cursor).sourceId);
  });

  test('the generation was bumped: GENERATION_CHANGED', ({ makeDb }) => {
    const { db } = makeDb('a.db', SCHEMA);
    enable(db, ['t']);
    const cursor = cursorOf(db);
    bump(db, 'bulk reload of t with triggers off');
    const v = expectRebuild(db, cursor, 'GENERATION_CHANGED');
    expect(v.message).toContain('bulk reload of t');
    expect(validateCursor(db, cursorOf(db)).status).toBe('ok');
  });

  test('ALTER TABLE ADD COLUMN by another writer unarms the table (TABLE_UNARMED, SCHEMA_CHANGED), and re-arming it gives SCHEMA_CHANGED to its cursors only', ({
    makeDb,
  }) => {
    const { db, file } = makeDb('a.db', SCHEMA);
    enable(db, ['t', 'other']);
    write(db, 5);
    const cursor = cursorOf(db);
    runSqliteCli(file, 'ALTER TABLE t ADD COLUMN extra INTEGER DEFAULT 7; UPDATE t SET extra = 8 WHERE id = 1;');
    const v = expectRebuild(db, cursor, 'TABLE_UNARMED');
    expect(v.detail).toEqual({ table: 't', reason: 'SCHEMA_CHANGED' });
    expect(v.message).toContain('SCHEMA_CHANGED');
    // A cursor for another, untouched table stays valid.
    const otherCursor = cursorOf(db, ['other']);
    expect(validateCursor(db, otherCursor).status).toBe('ok');
    // Even a fresh snapshot is refused until the table is re-armed.
    expect(() => snapshot(db, ['t'], { onRow: () => {} })).toThrow(expect.objectContaining({ code: 'TABLE_UNARMED' }));
    const r = enable(db, []);
    expect(r.rearmed).toEqual(['t']);
    expectRebuild(db, cursor, 'SCHEMA_CHANGED');
    // The re-arm of t moved the generation, but a reader of other alone goes on.
    expect(r.generation).toBeGreaterThan(decodeCursor(otherCursor).generation);
    expect(validateCursor(db, otherCursor).status).toBe('ok');
    const fresh = cursorOf(db);
    expect(validateCursor(db, fresh).status).toBe('ok');
  });

  test('re-arming after ALTER TABLE (as sync does at its open) gives SCHEMA_CHANGED', ({ makeDb }) => {
    const { db, file } = makeDb('a.db', SCHEMA);
    enable(db, ['t']);
    const cursor = cursorOf(db);
    db.close();
    runPython(`import sqlite3,sys\ncon=sqlite3.connect(sys.argv[1])\ncon.execute('ALTER TABLE t ADD COLUMN extra')\ncon.commit()`, [file]);
    const reopened = openSource(file);
    expectRebuild(reopened, cursor, 'TABLE_UNARMED');
    expect(rearmCapture(reopened)?.tables).toMatchObject([{ table: 't', reason: 'SCHEMA_CHANGED' }]);
    expectRebuild(reopened, cursor, 'SCHEMA_CHANGED');
    reopened.close();
  });

  test('the table was dropped and created again with the same name: TABLE_UNARMED, then TABLE_REARMED after re-arm', ({ makeDb }) => {
    const { db, file } = makeDb('a.db', SCHEMA);
    enable(db, ['t']);
    write(db, 5);
    const cursor = cursorOf(db);
    // Same name, same shape, rows copied in without any trigger watching.
    runSqliteCli(
      file,
      "BEGIN; DROP TABLE t; CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'reloaded'); COMMIT;",
    );
    const v = expectRebuild(db, cursor, 'TABLE_UNARMED');
    // Same name and shape, so the fingerprint matches: what gives it away is that its triggers went with the old table.
    expect(v.detail).toEqual({ table: 't', reason: 'TRIGGER_MISSING' });
    enable(db, []);
    expect(expectRebuild(db, cursor, 'TABLE_REARMED').detail).toEqual({ table: 't' });
  });

  test('a dropped table (not recreated) is TABLE_UNARMED', ({ makeDb }) => {
    const { db, file } = makeDb('a.db', SCHEMA);
    enable(db, ['t']);
    const cursor = cursorOf(db);
    runSqliteCli(file, 'DROP TABLE t;');
    const v = expectRebuild(db, cursor, 'TABLE_UNARMED');
    expect(v.detail).toEqual({ table: 't', reason: 'TABLE_MISSING' });
  });

  test('writers pruned the journal past the cursor: CURSOR_PRUNED', ({ makeDb }) => {
    const { db } = makeDb('a.db', SCHEMA);
    enable(db, ['t'], { retention: 1024 });
    write(db, 10);
    const cursor = cursorOf(db);
    expect(decodeCursor(cursor).seq).toBe(10);
    write(db, 3100, 100);
    const v = expectRebuild(db, cursor, 'CURSOR_PRUNED');
    expect(v.message).toContain('retention 1024');
    // A cursor at the pruned horizon itself is still complete.
    const start = journalStartCursor(db, ['t']);
    expect(validateCursor(db, start).status).toBe('ok');
    const first = readBatch(db, start, { limit: 1 });
    expect(first.events[0]?.seq).toBe(decodeCursor(start).seq + 1);
  });

  test("the cursor's last event was pruned (a reader retention events behind): CURSOR_PRUNED; one event less behind continues", ({
    makeDb,
  }) => {
    const { db } = makeDb('a.db', SCHEMA);
    enable(db, ['t'], { retention: 1024 });
    write(db, 16);
    const atHorizon = cursorOf(db);
    write(db, 1, 100);
    const behindByLess = cursorOf(db);
    // Up to seq 1040: the tick there prunes through 1040 - 1024 = 16, the first cursor's seq and its last event.
    write(db, 1040 - 17, 200);
    expect(db.prepare('SELECT pruned_through FROM _sluice_state').pluck().get()).toBe(16n);
    expect(decodeCursor(atHorizon)).toMatchObject({ seq: 16, anchor: { seq: 16 } });
    const v = expectRebuild(db, atHorizon, 'CURSOR_PRUNED');
    expect(v.message).toContain('last event');
    expect(v.message).toContain('cannot be checked');
    // retention - 1 events behind: its last event is retained, so it is checked and goes on.
    expect(decodeCursor(behindByLess).seq).toBe(1040 - 1023);
    expect(validateCursor(db, behindByLess).status).toBe('ok');
    expect(readBatch(db, behindByLess, { limit: 1 }).events[0]?.seq).toBe(18);
    expect(changedSince(db, behindByLess)).toEqual({ changed: true, lastSeq: 1040 });
  });

  test("an older copy restored in place and written until the pruned horizon is the cursor's seq: CURSOR_PRUNED, not a silent continuation", ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('a.db', SCHEMA);
    enable(db, ['t'], { retention: 1024 });
    write(db, 100);
    const copy = takeCopy(db, file, tmp);
    write(db, 12, 1);
    const cursor = cursorOf(db);
    expect(decodeCursor(cursor)).toMatchObject({ seq: 112, anchor: { seq: 112 } });
    db.close();
    const restored = copy.restore();
    restored.close();
    // Another program writes the restored copy, one commit per event, until seq 1136: pruned through 112.
    runPython(
      `import sqlite3,sys
c=sqlite3.connect(sys.argv[1]); i=0
while c.execute('select max(seq) from _sluice_journal').fetchone()[0] < 1136:
    c.execute('update t set v=? where id=?', ('new%d' % i, 1 + i % 50)); c.commit(); i+=1`,
      [file],
    );
    const again = openDatabase(file);
    try {
      expect(again.prepare('SELECT pruned_through FROM _sluice_state').pluck().get()).toBe(112n);
      const v = expectRebuild(again, cursor, 'CURSOR_PRUNED');
      expect(v.message).toContain('seq 112');
      // A stream's cursor of the restored file at the same seq (the journal's start there) does not vouch for it either.
      const start = journalStartCursor(again, ['t']);
      expect(decodeCursor(start).seq).toBe(112);
      expect(cursorContinues(cursor, decodeCursor(start))).toMatchObject({ status: 'rebuild', reason: 'CURSOR_PRUNED' });
    } finally {
      again.close();
    }
  });

  test('a cursor with no event at or below it whose journal was pruned since it was made: CURSOR_PRUNED (the journal start itself continues)', ({
    makeDb,
  }) => {
    const { db } = makeDb('a.db', SCHEMA);
    enable(db, ['t'], { retention: 1024 });
    write(db, 1040);
    const start = journalStartCursor(db, ['t']);
    expect(decodeCursor(start)).toMatchObject({ seq: 16, anchor: null, ext: { pt: 16 } });
    expect(validateCursor(db, start).status).toBe('ok');
    // The same position, made when less was pruned (nothing was left at or below it then): what it continues cannot be checked.
    const older = encodeCursor({ ...decodeCursor(start), ext: { ...decodeCursor(start).ext, pt: 0 } });
    expectRebuild(db, older, 'CURSOR_PRUNED');
  });

  test('the file was restored from an older copy (seq went backwards): SEQ_REGRESSED', ({ makeDb, tmp }) => {
    const { db, file } = makeDb('a.db', SCHEMA);
    enable(db, ['t']);
    write(db, 5);
    const copy = takeCopy(db, file, tmp);
    write(db, 20, 10);
    const cursor = cursorOf(db);
    const inode = fs.statSync(file).ino;
    db.close();
    // Restore the old bytes over the same path (the same inode, so only the seq can tell).
    const restored = copy.restore();
    expect(fs.statSync(file).ino).toBe(inode);
    const v = expectRebuild(restored, cursor, 'SEQ_REGRESSED');
    expect(v.message).toContain('restored');
    restored.close();
  });

  test.for([
    ['the same number of writes as were lost', 0],
    ['more writes than were lost', 7],
  ] as const)('an older copy restored in place and written past the cursor with %s: HISTORY_DIVERGED', ([, extra], { makeDb, tmp }) => {
    const { db, file } = makeDb('a.db', SCHEMA);
    enable(db, ['t']);
    write(db, 5);
    const copy = takeCopy(db, file, tmp);
    const lost = 10;
    write(db, lost, 100);
    const cursor = cursorOf(db);
    db.close();
    const restored = copy.restore();
    try {
      // Other writes take the seqs the lost ones had: seq, source, generation and inode all match.
      write(restored, Math.max(lost + extra, 3), 200);
      expect(decodeCursor(cursor).seq).toBeLessThanOrEqual(Number(restored.prepare('SELECT max(seq) FROM _sluice_journal').pluck().get()));
      const v = expectRebuild(restored, cursor, 'HISTORY_DIVERGED');
      expect(v.message).toContain('restored');
      // A cursor made on the restored file continues.
      expect(validateCursor(restored, cursorOf(restored)).status).toBe('ok');
    } finally {
      restored.close();
    }
  });

  test('a copy of the file at another path: FILE_CHANGED (a hard link to the same file is fine)', ({ makeDb, tmp }) => {
    const { db, file } = makeDb('a.db', SCHEMA);
    enable(db, ['t']);
    write(db, 5);
    const cursor = cursorOf(db);
    db.pragma('wal_checkpoint(TRUNCATE)');
    const copy = path.join(tmp, 'copy.db');
    fs.copyFileSync(file, copy);
    const link = path.join(tmp, 'link.db');
    fs.linkSync(file, link);
    const c = openDatabase(copy);
    expectRebuild(c, cursor, 'FILE_CHANGED');
    c.close();
    const l = openDatabase(link, { readonly: true });
    expect(validateCursor(l, cursor).status).toBe('ok');
    l.close();
  });

  test('the cursor has a format version this build does not know: CURSOR_VERSION_UNKNOWN', ({ makeDb }) => {
    const { db } = makeDb('a.db', SCHEMA);
    enable(db, ['t']);
    const current = cursorOf(db);
    const [, payload] = current.split('.') as [string, string, string];
    const body = `sluice3.${payload}`;
    const future = `${body}.${createHash('sha256').update(body).digest('hex').slice(0, 8)}`;
    const v = expectRebuild(db, future, 'CURSOR_VERSION_UNKNOWN');
    expect(v.message).toContain('version 3');
  });

  test('a table the cursor or the caller names is not captured: TABLE_UNTRACKED', ({ makeDb }) => {
    const { db } = makeDb('a.db', `${SCHEMA}; CREATE TABLE loose (id INTEGER PRIMARY KEY)`);
    enable(db, ['t']);
    expect(() => snapshot(db, ['loose'], { onRow: () => {} })).toThrow(expect.objectContaining({ code: 'TABLE_UNTRACKED' }));
    const cursor = cursorOf(db);
    // Asking about an untracked table: always changed, never a silent "no".
    expect(changedSince(db, cursor, ['loose'])).toEqual({ changed: true, rebuild: 'TABLE_UNTRACKED' });
    // A cursor (from this source) that claims to cover it must rebuild.
    const decoded = decodeCursor(cursor);
    const claimed = encodeCursor({ ...decoded, tables: ['t', 'loose'], armed: [...decoded.armed, 1] });
    expect(expectRebuild(db, claimed, 'TABLE_UNTRACKED').detail).toEqual({ table: 'loose' });
  });
});
