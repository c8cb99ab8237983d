// a target table's columns changed by hand (dropped, renamed, another declared type or collation): health and sync both say TARGET_TABLE_CHANGED naming the column, and sync suspends before it writes
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, vi } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { health } from '../../../src/index.ts';
import { tableShapeProblem } from '../../../src/apply/check/index.ts';
import { readProjection } from '../../../src/apply/target/index.ts';
import { compileProjection, parseStoredDefinition, type SourceShape } from '../../../src/projection/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { runCliAsync, makeDir, removeDir, scalar } from '../../cli/support/cli.ts';

/*
 * What health says of a projection's table and what sync checks before it
 * applies a batch is one rule (apply/check/target-shape.ts). sync checked
 * only the key: a mirror column dropped or renamed by hand failed every
 * sync with SQLite's bare "no such column: t.n" (exit 1, no file, no reason
 * code, no repair, the projection never suspended), and a table made again
 * by the 12-step recipe with the same names but `v INTEGER` for `v TEXT`
 * was green in health and synced the source's '3' as 3 with exit 0 (health
 * compared names only); with the key made COLLATE NOCASE, a key the source
 * holds apart from another was blamed on the source (UNCAPTURED_REPLACE).
 * Now each suspends the projection with TARGET_TABLE_CHANGED, naming the
 * column, what changed and the rebuild, and health says the same before.
 */

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

const run = (args: readonly string[]) => runCliAsync(args);

/** A source with `schema`, captured (`tables`), synced into a new target (with `projections`, definition objects). */
async function synced(schema: string, tables: readonly string[], projections: readonly object[] = []) {
  const src = at('src.db');
  const tgt = at('tgt.db');
  runSqliteCli(src, schema);
  expect((await run(['enable', src, ...tables])).status).toBe(0);
  const files = projections.map((p, i) => {
    const f = at(`p${i}.json`);
    fs.writeFileSync(f, JSON.stringify(p));
    return f;
  });
  const flags = files.flatMap((f) => ['--projection', f]);
  const s = await run(['sync', src, tgt, ...flags]);
  expect(s.status, s.stdout + s.stderr).toBe(0);
  return { src, tgt, flags };
}

/** health's word on projection `name` of `tgt`. */
const healthOf = (tgt: string, name: string) => health(tgt).projections.find((p) => p.name === name);

/** sync, expected to suspend `name` with TARGET_TABLE_CHANGED saying `what`, and health then showing that suspension with reinit as repair. */
async function suspends(src: string, tgt: string, flags: readonly string[], name: string, what: RegExp): Promise<void> {
  const s = await run(['sync', src, tgt, ...flags]);
  const out = s.stdout + s.stderr;
  expect(s.status, out).toBe(3);
  expect(out).toContain(`${name}: SUSPENDED TARGET_TABLE_CHANGED`);
  expect(out).toMatch(what);
  expect(out).toContain(`sluice reinit ${src} ${tgt} ${name}`);
  expect(out).not.toMatch(/SQLITE_|UNCAPTURED_REPLACE/);
  const h = healthOf(tgt, name);
  expect(h).toMatchObject({ state: 'suspended', reason: 'TARGET_TABLE_CHANGED', needsAction: true });
  expect(String((h?.detail as { message?: unknown } | undefined)?.message)).toMatch(what);
  expect(h?.action).toContain(`sluice reinit ${src} ${tgt} ${name}`);
}

/** Before a sync: health needs action for `name`, saying `what` and the reinit. */
function healthSays(src: string, tgt: string, name: string, what: RegExp): void {
  const h = healthOf(tgt, name);
  expect(h?.needsAction).toBe(true);
  expect(h?.action).toMatch(what);
  expect(h?.action).toContain(`sluice reinit ${src} ${tgt} ${name}`);
}

/** reinit, then a sync that applies, and health green. */
async function repaired(src: string, tgt: string, flags: readonly string[], name: string): Promise<void> {
  const r = await run(['reinit', src, tgt, name, ...flags]);
  expect(r.status, r.stdout + r.stderr).toBe(0);
  const s = await run(['sync', src, tgt, ...flags]);
  expect(s.status, s.stdout + s.stderr).toBe(0);
  expect(health(tgt).ok).toBe(true);
}

describe('a mirror column dropped or renamed by hand', () => {
  test('sync suspends it with TARGET_TABLE_CHANGED naming the column, not a bare "no such column"; reinit repairs it', async () => {
    const { src, tgt, flags } = await synced("CREATE TABLE t(id INTEGER PRIMARY KEY, title TEXT, n INT); INSERT INTO t VALUES(1,'a',1);", [
      't',
    ]);
    runSqliteCli(tgt, 'ALTER TABLE t DROP COLUMN n');
    runSqliteCli(src, "INSERT INTO t VALUES(2,'b',2)");
    healthSays(src, tgt, 't', /table t of projection t has other columns than its definition \(missing: n; /);
    await suspends(src, tgt, flags, 't', /table t of projection t has other columns than its definition \(missing: n; /);
    expect(scalar(tgt, 'SELECT count(*) FROM t')).toBe(1n);
    await repaired(src, tgt, flags, 't');
    expect(scalar(tgt, 'SELECT n FROM t WHERE id = 2')).toBe(2n);

    runSqliteCli(tgt, 'ALTER TABLE t RENAME COLUMN n TO m');
    runSqliteCli(src, "INSERT INTO t VALUES(3,'c',3)");
    await suspends(src, tgt, flags, 't', /other columns than its definition \(not in the definition: m; missing: n; /);
    await repaired(src, tgt, flags, 't');
    expect(scalar(tgt, 'SELECT n FROM t WHERE id = 3')).toBe(3n);
  });
});

describe('a mirror table made again by hand with the same names but another declared type or collation', () => {
  test('v TEXT made v INTEGER: health needs action and sync suspends it instead of storing the text 3 as the integer 3', async () => {
    const { src, tgt, flags } = await synced("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES(1,'x');", ['t']);
    runSqliteCli(
      tgt,
      'BEGIN; CREATE TABLE t_new(k INTEGER, v INTEGER, PRIMARY KEY(k)); INSERT INTO t_new SELECT * FROM t; DROP TABLE t; ALTER TABLE t_new RENAME TO t; COMMIT;',
    );
    const what =
      /column v of table t of projection t is declared INTEGER \(INTEGER affinity\), but its definition declares TEXT \(TEXT affinity\)/;
    healthSays(src, tgt, 't', what);
    runSqliteCli(src, "INSERT INTO t VALUES(3,'3')");
    await suspends(src, tgt, flags, 't', what);
    expect(scalar(tgt, 'SELECT count(*) FROM t WHERE k = 3')).toBe(0n);
    await repaired(src, tgt, flags, 't');
    expect(scalar(tgt, 'SELECT quote(v) FROM t WHERE k = 3')).toBe("'3'");
  });

  test('the key made COLLATE NOCASE: TARGET_TABLE_CHANGED naming the key and its collation, not UNCAPTURED_REPLACE', async () => {
    const { src, tgt, flags } = await synced("CREATE TABLE t(k TEXT PRIMARY KEY, v); INSERT INTO t VALUES('a',1);", ['t']);
    runSqliteCli(
      tgt,
      'BEGIN; CREATE TABLE t_new(k TEXT COLLATE NOCASE, v, PRIMARY KEY(k)); INSERT INTO t_new SELECT * FROM t; DROP TABLE t; ALTER TABLE t_new RENAME TO t; COMMIT;',
    );
    const what = /table t of projection t has its key \(k\) under collation NOCASE where its definition has BINARY/;
    healthSays(src, tgt, 't', what);
    runSqliteCli(src, "INSERT INTO t VALUES('A',2)");
    await suspends(src, tgt, flags, 't', what);
    await repaired(src, tgt, flags, 't');
    expect(scalar(tgt, 'SELECT count(*) FROM t')).toBe(2n);

    // The column's collation kept, the key's index under another (PRIMARY KEY (k COLLATE NOCASE)).
    runSqliteCli(
      tgt,
      "BEGIN; CREATE TABLE t_new(k TEXT, v, PRIMARY KEY(k COLLATE NOCASE)); INSERT INTO t_new SELECT * FROM t WHERE k = 'a'; DROP TABLE t; ALTER TABLE t_new RENAME TO t; COMMIT;",
    );
    healthSays(src, tgt, 't', what);
  });

  test('a column that is not the key made COLLATE NOCASE: named with its collation', async () => {
    const { src, tgt } = await synced("CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES(1,'x');", ['t']);
    runSqliteCli(
      tgt,
      'BEGIN; CREATE TABLE t_new(k INTEGER PRIMARY KEY, v TEXT COLLATE NOCASE); INSERT INTO t_new SELECT * FROM t; DROP TABLE t; ALTER TABLE t_new RENAME TO t; COMMIT;',
    );
    healthSays(src, tgt, 't', /column v of table t of projection t has collation NOCASE, where its definition has BINARY/);
  });
});

describe("a map's computed column declared with another type by hand", () => {
  test('health and sync name the column and both types', async () => {
    const map = { name: 'm', source: 't', kind: 'map', columns: { id: 'id', n2: { expr: 'n * 2', type: 'INTEGER' }, title: 'title' } };
    const { src, tgt, flags } = await synced(
      "CREATE TABLE t(id INTEGER PRIMARY KEY, title TEXT, n INT); INSERT INTO t VALUES(1,'a',1);",
      ['t'],
      [map],
    );
    runSqliteCli(
      tgt,
      'BEGIN; CREATE TABLE m_new(id INTEGER, n2 TEXT, title TEXT, PRIMARY KEY(id)); INSERT INTO m_new SELECT * FROM m; DROP TABLE m; ALTER TABLE m_new RENAME TO m; COMMIT;',
    );
    const what =
      /column n2 of table m of projection m is declared TEXT \(TEXT affinity\), but its definition declares INTEGER \(INTEGER affinity\)/;
    healthSays(src, tgt, 'm', what);
    runSqliteCli(src, "INSERT INTO t VALUES(2,'b',2)");
    await suspends(src, tgt, flags, 'm', what);
    await repaired(src, tgt, flags, 'm');
    expect(scalar(tgt, 'SELECT quote(n2) FROM m WHERE id = 2')).toBe('4');
  });
});

describe('an fts5 index whose tables were changed by hand', () => {
  const search = { name: 's', source: 'd', kind: 'fts5', columns: ['title', 'body'], content: 'external' };
  const schema = "CREATE TABLE d(id TEXT PRIMARY KEY, title TEXT, body TEXT); INSERT INTO d VALUES('a','hello','world');";

  test("its key table's key column made another type: health and sync name it", async () => {
    const { src, tgt, flags } = await synced(schema, ['d'], [search]);
    runSqliteCli(
      tgt,
      `BEGIN; CREATE TABLE x(rowid INTEGER PRIMARY KEY, _k0 INTEGER, title, body, UNIQUE(_k0)); INSERT INTO x SELECT * FROM s_src;
       DROP TABLE s_src; ALTER TABLE x RENAME TO s_src; COMMIT;`,
    );
    const what =
      /column _k0 of table s_src of projection s is declared INTEGER \(INTEGER affinity\), but its definition declares TEXT \(TEXT affinity\)/;
    healthSays(src, tgt, 's', what);
    runSqliteCli(src, "INSERT INTO d VALUES('7','zebra','x')");
    await suspends(src, tgt, flags, 's', what);
    await repaired(src, tgt, flags, 's');
    expect(scalar(tgt, "SELECT quote(_k0) FROM s_src WHERE title = 'zebra'")).toBe("'7'");
  });

  test('a value column of its key table renamed, or the index made again with other columns: named', async () => {
    const { src, tgt, flags } = await synced(schema, ['d'], [search]);
    runSqliteCli(tgt, 'ALTER TABLE s_src RENAME COLUMN body TO text');
    runSqliteCli(src, "INSERT INTO d VALUES('b','zebra','x')");
    await suspends(
      src,
      tgt,
      flags,
      's',
      /table s_src of projection s has other columns than its definition \(not in the definition: text; missing: body; /,
    );
    await repaired(src, tgt, flags, 's');

    runSqliteCli(tgt, "DROP TABLE s; CREATE VIRTUAL TABLE s USING fts5(title, text, content='s_src', content_rowid='rowid');");
    healthSays(
      src,
      tgt,
      's',
      /table s of projection s has other columns than its definition \(not in the definition: text; missing: body; /,
    );
  });
});

describe('the rule as a follower asks it, before each batch', () => {
  test('prepares nothing while the schema is unchanged, and sees a column renamed by another connection at the next ask', async () => {
    const { tgt } = await synced("CREATE TABLE t(id INTEGER PRIMARY KEY, title TEXT, n INT); INSERT INTO t VALUES(1,'a',1);", ['t']);
    const db = openDatabase(tgt);
    try {
      const rec = readProjection(db, 'main', 't');
      if (rec === undefined) throw new Error('no projection t');
      const p = compileProjection(parseStoredDefinition(rec.definition, 't'), JSON.parse(rec.sourceShape) as SourceShape);
      expect(tableShapeProblem(db, 'main', p)).toBeUndefined();
      const prepare = vi.spyOn(db, 'prepare');
      for (let i = 0; i < 3; i++) expect(tableShapeProblem(db, 'main', p)).toBeUndefined();
      // (Only its cached schema_version statement ran.)
      expect(prepare).not.toHaveBeenCalled();
      prepare.mockRestore();
      runSqliteCli(tgt, 'ALTER TABLE t RENAME COLUMN n TO m');
      expect(tableShapeProblem(db, 'main', p)).toMatchObject({
        table: 't',
        message: expect.stringMatching(/not in the definition: m; missing: n/),
      });
    } finally {
      db.close();
    }
  });
});
