// _sluice_pending dropped outside sluice: status and health say CAPTURE_DAMAGED, and the enable they name makes it again with no reader rebuilding
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runPython, runSqliteCli } from '../support/fixtures.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { health } from '../../src/apply/check/index.ts';
import { enable, status } from '../../src/capture/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { runCliAsync, makeDir, removeDir, scalar, expectOneLineError } from '../cli/support/cli.ts';

/*
 * A schema tool dropped _sluice_pending, the scratch table the capture's
 * REPLACE guards fill and empty inside one statement. Every insert into a
 * captured table then failed in the application ("no such table:
 * main._sluice_pending"), yet status and health exited 0, and enable,
 * which re-arms what is missing, left it missing. status and health now
 * say CAPTURE_DAMAGED with the repair, and that repair, an enable of a
 * table the source captures, makes the table again, empty: no write went
 * unrecorded while it was missing (they all failed), so the generation
 * stays and no reader rebuilds.
 */

let dir: string;
let src: string;
let tgt: string;
const at = (f: string) => path.join(dir, f);

beforeEach(() => {
  dir = makeDir();
  src = at('app.db');
  tgt = at('cache.db');
  runSqliteCli(
    src,
    'CREATE TABLE t (id INTEGER PRIMARY KEY, v); CREATE TABLE k (id INTEGER PRIMARY KEY, e TEXT UNIQUE); INSERT INTO t VALUES (1, 1), (2, 2); INSERT INTO k VALUES (1, 1);',
  );
});
afterEach(() => removeDir(dir));

/** An insert by Python's sqlite3, a writer that knows nothing of sluice: 'ok' or its error. */
const insert = (sql: string) =>
  runPython(
    `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
try:
    con.execute(sys.argv[2]); con.commit(); print('ok')
except Exception as e:
    print(e)
`,
    [src, sql],
  ).trim();

function onSource<T>(fn: (db: ReturnType<typeof openDatabase>) => T): T {
  const db = openDatabase(src);
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

describe('_sluice_pending dropped outside sluice', () => {
  test('status and health say CAPTURE_DAMAGED; the enable they name makes it again, the writes go on and are captured, nothing rebuilds', async () => {
    onSource((db) => enable(db, ['t', 'k']));
    await sync(src, tgt);
    const generation = onSource((db) => status(db).generation);
    runSqliteCli(src, 'DROP TABLE _sluice_pending');
    expect(insert('INSERT INTO t VALUES (3, 3)')).toBe('no such table: main._sluice_pending');

    expect(() => onSource((db) => status(db))).toThrow(/_sluice_pending is missing/);
    const s = await runCliAsync(['status', src]);
    expect(s.status, s.stdout).toBe(3);
    expectOneLineError(s, 'CAPTURE_DAMAGED');
    expect(s.stderr).toContain(`sluice enable ${src} t makes it again`);
    const h = health(tgt);
    expect(h.ok).toBe(false);
    for (const p of h.projections) expect(p.action, p.name).toMatch(/^CAPTURE_DAMAGED: .*_sluice_pending is missing/);

    // The repair status names, run as it is printed.
    const e = await runCliAsync(['enable', src, 't', '--json']);
    expect(e.status, e.stderr).toBe(0);
    expect(JSON.parse(e.stdout)).toMatchObject({ created: false, added: [], rearmed: [], remade: ['_sluice_pending'], generation });
    // A second enable has nothing to do.
    expect(onSource((db) => enable(db, ['t'])).remade).toBeUndefined();

    expect(insert('INSERT INTO t VALUES (3, 3)')).toBe('ok');
    expect(insert('INSERT OR REPLACE INTO k VALUES (2, 1)')).toBe('ok');
    expect(onSource((db) => status(db)).tables.every((t) => t.armed)).toBe(true);
    const r = await sync(src, tgt);
    for (const p of r.projections) {
      expect(p.state, p.name).toBe('active');
      expect(p.rebuilt, p.name).toBeUndefined();
    }
    expect(scalar(tgt, 'SELECT v FROM t WHERE id = 3')).toBe(3n);
    // The REPLACE's deleted row is gone from the target too (its note went through the table made again).
    expect(scalar(tgt, 'SELECT group_concat(id) FROM k')).toBe('2');
    expect(health(tgt).ok).toBe(true);
  });

  test('made again by hand with another shape: status and health say CAPTURE_DAMAGED naming it, enable refuses it, and the repair they print (drop it, then enable) makes it right', async () => {
    onSource((db) => enable(db, ['t', 'k']));
    await sync(src, tgt);
    // Someone read "no such table: main._sluice_pending" and made one.
    runSqliteCli(
      src,
      'DROP TABLE _sluice_pending; CREATE TABLE _sluice_pending(tid INTEGER NOT NULL, op INTEGER NOT NULL, hw INTEGER NOT NULL)',
    );
    expect(insert('INSERT OR REPLACE INTO k VALUES (2, 1)')).toMatch(/table _sluice_pending has no column named c0/);

    const s = await runCliAsync(['status', src]);
    expect(s.status, s.stdout).toBe(3);
    expectOneLineError(s, 'CAPTURE_DAMAGED');
    expect(s.stderr).toContain('_sluice_pending is not the table sluice makes');
    expect(s.stderr).toContain(`sqlite3 ${src} 'DROP TABLE _sluice_pending'`);
    expect(s.stderr).toContain(`then sluice enable ${src} t makes it again`);
    const h = health(tgt);
    expect(h.ok).toBe(false);
    for (const p of h.projections) expect(p.action, p.name).toMatch(/^CAPTURE_DAMAGED: .*_sluice_pending is not the table sluice makes/);
    // enable alone does not repair it: the table is not sluice's, so it refuses to touch it.
    const refused = await runCliAsync(['enable', src, 't']);
    expect(refused.status).not.toBe(0);
    expect(refused.stderr).toContain('NAMESPACE_COLLISION');

    // The repair status names, run as it is printed.
    runSqliteCli(src, 'DROP TABLE _sluice_pending');
    const e = await runCliAsync(['enable', src, 't', '--json']);
    expect(e.status, e.stderr).toBe(0);
    expect(JSON.parse(e.stdout)).toMatchObject({ remade: ['_sluice_pending'] });
    expect(insert('INSERT OR REPLACE INTO k VALUES (2, 1)')).toBe('ok');
    expect(onSource((db) => status(db)).tables.every((t) => t.armed)).toBe(true);
    await sync(src, tgt);
    expect(scalar(tgt, 'SELECT group_concat(id) FROM k')).toBe('2');
    expect(health(tgt).ok).toBe(true);
  });

  test('another table of the capture made again by hand with another shape: the repair is to drop it, then capture again', ({ makeDb }) => {
    const { db, file } = makeDb('last.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    enable(db, ['t']);
    db.exec('DROP TABLE _sluice_last; CREATE TABLE _sluice_last (k INTEGER)');
    expect(() => status(db)).toThrow(/_sluice_last is not the table sluice makes/);
    expect(() => status(db)).toThrow(`sqlite3 ${file} 'DROP TABLE _sluice_last'`);
    expect(() => status(db)).toThrow(`sluice disable ${file}`);
  });

  test('a source whose captured tables are all in keys mode: the repair names the mode', ({ makeDb }) => {
    const { db, file } = makeDb('keys.db', 'CREATE TABLE k (id INTEGER PRIMARY KEY, e TEXT UNIQUE)');
    enable(db, ['k'], { mode: 'keys' });
    db.exec('DROP TABLE _sluice_pending');
    expect(() => status(db)).toThrow(`sluice enable ${file} k --mode keys makes it again`);
  });
});
