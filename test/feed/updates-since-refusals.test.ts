// updates since refuses what it cannot continue with a reason code
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { takeCopy } from '../support/restore.ts';
import type { Db } from '../../src/sqlite/index.ts';
import { enable, disable, status, TABLES_TABLE, triggerNames } from '../../src/capture/index.ts';
import {
  snapshot,
  readBatch,
  journalStartCursor,
  validateCursor,
  decodeCursor,
  encodeCursor,
  updatesSince,
  type RowChange,
} from '../../src/feed/index.ts';
import { FailClosedError, InvalidInputError } from '../../src/errors.ts';

const SCHEMA = "CREATE TABLE dogs (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO dogs VALUES (1, 'Cleo'), (2, 'Pancakes')";

function cursorOf(db: Db): string {
  return snapshot(db, ['dogs'], { onRow: () => {} }).cursor;
}

/** Every current row of dogs, as updatesSince reports a present row. */
function rowsOf(db: Db): { pks: bigint[]; row: { id: bigint; name: string }; deleted: false }[] {
  return (db.prepare('SELECT id, name FROM dogs ORDER BY id').all() as { id: bigint; name: string }[]).map((r) => ({
    pks: [r.id],
    row: { id: r.id, name: r.name },
    deleted: false,
  }));
}

const brief = (c: RowChange) => ({ pks: c.pks, row: c.row, deleted: c.deleted });

/** Asserts updatesSince refuses `cursor` with FailClosedError `reason`, exactly as validateCursor decides. */
function expectRefused(db: Db, cursor: string, reason: string): FailClosedError {
  const v = validateCursor(db, cursor);
  expect(v.status === 'rebuild' ? v.reason : v.status).toBe(reason);
  let thrown: unknown;
  try {
    [...updatesSince(db, 'dogs', cursor)];
  } catch (err) {
    thrown = err;
  }
  expect(thrown).toBeInstanceOf(FailClosedError);
  expect((thrown as FailClosedError).code).toBe(reason);
  expect((thrown as FailClosedError).exitCode).toBe(3);
  expect((thrown as FailClosedError).detail).toEqual({ ...(v.status === 'rebuild' ? v.detail : {}), rebuild: reason });
  return thrown as FailClosedError;
}

/** A bare seq names no source, generation or schema: it is refused, never answered. */
function expectBareSeqRefused(db: Db, seq: number): void {
  expect(() => [...updatesSince(db, 'dogs', seq as never)]).toThrow(InvalidInputError);
  expect(() => [...updatesSince(db, 'dogs', seq as never)]).toThrow(
    expect.objectContaining({ code: 'CURSOR_REQUIRED', message: expect.stringContaining('cursor') }),
  );
}

describe('updatesSince validates its cursor like every reader', () => {
  test('after disable and enable (a new source, seq restarted) it refuses with SOURCE_CHANGED, and a full read sees the new writes', ({
    makeDb,
  }) => {
    const { db } = makeDb('u.db', SCHEMA);
    enable(db, ['dogs']);
    db.exec("UPDATE dogs SET name = 'Cleo2' WHERE id = 1; INSERT INTO dogs VALUES (3, 'Fido')");
    const cursor = cursorOf(db);
    const seq = status(db).seq;
    disable(db);
    enable(db, ['dogs']);
    db.exec("UPDATE dogs SET name = 'Rex' WHERE id = 2; INSERT INTO dogs VALUES (4, 'Max')");
    expect(status(db).seq).toBeLessThanOrEqual(seq);
    expectRefused(db, cursor, 'SOURCE_CHANGED');
    expectBareSeqRefused(db, seq);
    expect([...updatesSince(db, 'dogs')].map(brief)).toEqual(rowsOf(db));
  });

  test('after an in-place restore of an older copy and fewer new writes than were lost, it refuses with SEQ_REGRESSED', ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('u.db', SCHEMA);
    enable(db, ['dogs']);
    db.exec("INSERT INTO dogs VALUES (3, 'Fido')");
    const copy = takeCopy(db, file, tmp);
    for (let i = 0; i < 10; i++) db.prepare('UPDATE dogs SET name = ? WHERE id = 1').run(`lost${i}`);
    const cursor = cursorOf(db);
    const seq = status(db).seq;
    db.close();
    // The old bytes over the same path (same inode): only the seq can tell.
    const restored = copy.restore();
    restored.exec("UPDATE dogs SET name = 'after-restore' WHERE id = 2");
    expectRefused(restored, cursor, 'SEQ_REGRESSED');
    expectBareSeqRefused(restored, seq);
    expect([...updatesSince(restored, 'dogs')].map(brief)).toEqual(rowsOf(restored));
    restored.close();
  });

  // Same source, generation and inode, and a high-water mark past the
  // cursor: only the cursor's anchor (the event at its seq) tells.
  test('after an in-place restore of an older copy and more new writes than were lost, it refuses with HISTORY_DIVERGED', ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('u.db', SCHEMA);
    enable(db, ['dogs']);
    const copy = takeCopy(db, file, tmp);
    for (let i = 0; i < 5; i++) db.prepare('UPDATE dogs SET name = ? WHERE id = 1').run(`lost${i}`);
    const cursor = cursorOf(db);
    db.close();
    const restored = copy.restore();
    try {
      for (let i = 0; i < 10; i++) restored.prepare('UPDATE dogs SET name = ? WHERE id = 2').run(`new${i}`);
      expect(validateCursor(restored, cursor)).toMatchObject({ status: 'rebuild', reason: 'HISTORY_DIVERGED' });
      expectRefused(restored, cursor, 'HISTORY_DIVERGED');
    } finally {
      restored.close();
    }
  });

  test('writes made while a trigger was dropped: TABLE_UNARMED while unarmed, TABLE_REARMED once re-armed, and a full read sees them', ({
    makeDb,
  }) => {
    const { db, file } = makeDb('u.db', SCHEMA);
    enable(db, ['dogs']);
    db.exec("UPDATE dogs SET name = 'Cleo2' WHERE id = 1");
    const cursor = cursorOf(db);
    const seq = status(db).seq;
    const tid = Number(db.prepare(`SELECT tid FROM ${TABLES_TABLE} WHERE name = 'dogs'`).pluck().get());
    runSqliteCli(file, `DROP TRIGGER ${triggerNames(tid).update}; UPDATE dogs SET name = 'unrecorded' WHERE id = 2;`);
    const unarmed = expectRefused(db, cursor, 'TABLE_UNARMED');
    expect(unarmed.detail).toMatchObject({ table: 'dogs', reason: 'TRIGGER_MISSING' });
    expect(enable(db, []).rearmed).toEqual(['dogs']);
    expectRefused(db, cursor, 'TABLE_REARMED');
    expectBareSeqRefused(db, seq);
    expect([...updatesSince(db, 'dogs')].map(brief)).toEqual(rowsOf(db));
  });
});

describe.each([
  ['keys', 'images'],
  ['images', 'keys'],
] as const)('a mode change %s -> %s with old events still in the journal', (from, to) => {
  function setup(makeDb: (name?: string, schema?: string) => { db: Db; file: string }) {
    const { db } = makeDb('u.db', SCHEMA);
    enable(db, ['dogs'], { mode: from });
    db.exec("UPDATE dogs SET name = 'Cleo2' WHERE id = 1; INSERT INTO dogs VALUES (3, 'Fido'); DELETE FROM dogs WHERE id = 2");
    const cursor = cursorOf(db);
    const seq = status(db).seq;
    enable(db, ['dogs'], { mode: to });
    db.exec("UPDATE dogs SET name = 'Fido2' WHERE id = 3");
    return { db, cursor, seq };
  }

  test('a cursor from before it is refused with SCHEMA_CHANGED (the capture mode is part of what it binds), and the full read is exact (no lost key, no NULL key deleted)', ({
    makeDb,
  }) => {
    const { db, cursor, seq } = setup(makeDb);
    expectRefused(db, cursor, 'SCHEMA_CHANGED');
    expectBareSeqRefused(db, seq);
    const full = [...updatesSince(db, 'dogs')];
    expect(full.map(brief)).toEqual(rowsOf(db));
    // Continuing from the full read's last cursor sees the next change, decoded in the new layout.
    db.exec("UPDATE dogs SET name = 'Cleo3' WHERE id = 1");
    expect([...updatesSince(db, 'dogs', full.at(-1)?.cursor)].map(brief)).toEqual([
      { pks: [1n], row: { id: 1n, name: 'Cleo3' }, deleted: false },
    ]);
  });

  test('the cursor binds the mode: a cursor from the old mode with the generation forged current is refused with SCHEMA_CHANGED', ({
    makeDb,
  }) => {
    const { db, cursor } = setup(makeDb);
    const forged = encodeCursor({ ...decodeCursor(cursor), generation: status(db).generation });
    expectRefused(db, forged, 'SCHEMA_CHANGED');
  });

  test('the journal start lists only events of the current arming, never old events read with the new layout', ({ makeDb }) => {
    const { db } = setup(makeDb);
    const events = readBatch(db, journalStartCursor(db, ['dogs'])).events;
    expect(events.map((e) => [e.op, e.key, e.after])).toEqual([['update', [3n], { id: 3n, name: 'Fido2' }]]);
  });
});
