// guarding again a table whose guard was dropped keeps the sign that edits may have gone in until verify compares it
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { runCliAsync, makeDir, removeDir } from '../../cli/support/cli.ts';

/*
 * A schema tool dropped the guard triggers `sluice protect` put on a
 * mirror's table, and the table was edited by hand while it was unguarded.
 * health said so (exit 3), but running `sluice protect` again (half of the
 * repair it names) made health and sync green with the edit still in the
 * target: re-guarding erased the only sign. protect takes only the target,
 * so it cannot compare the rows with the source: it keeps a mark in the
 * target for each table it found unguarded, says so (exit 3), and health
 * reports it (exit 3, naming verify) until a verify of that projection
 * compares it: equal, the mark goes; different, verify suspends it
 * (TARGET_EDITED, repaired by reinit) and the mark goes with the
 * suspension as the sign. sync, which makes a protected target's missing
 * guards again on the tables it writes, keeps the same mark.
 */

let dir: string;
let src: string;
let tgt: string;
const at = (f: string) => path.join(dir, f);

beforeEach(async () => {
  dir = makeDir();
  src = at('src.db');
  tgt = at('tgt.db');
  runSqliteCli(
    src,
    "CREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<10) INSERT INTO t SELECT i, 'row '||i FROM n;",
  );
  for (const args of [
    ['enable', src, 't'],
    ['sync', src, tgt],
    ['protect', tgt],
  ]) {
    const r = await runCliAsync(args);
    expect(r.status, r.stderr).toBe(0);
  }
});
afterEach(() => removeDir(dir));

/** Drops every trigger on t in the target, as a schema tool that does not know them does. */
function dropGuards(): void {
  const names = runSqliteCli(tgt, "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 't';").trim().split('\n');
  expect(names.length).toBe(3);
  runSqliteCli(tgt, names.map((n) => `DROP TRIGGER "${n}";`).join('\n'));
}

const rowOf = (id: number) => runSqliteCli(tgt, `SELECT a FROM t WHERE id = ${id};`).trim();

describe('sluice protect of a table found unguarded', () => {
  test('an edit made while unguarded: protect says so (exit 3), health stays 3 until verify, which suspends it TARGET_EDITED; reinit repairs', async () => {
    dropGuards();
    runSqliteCli(tgt, "UPDATE t SET a = 'EDITED' WHERE id = 3;");
    expect((await runCliAsync(['health', tgt])).status).toBe(3);

    const p = await runCliAsync(['protect', tgt]);
    expect(p.status, p.stdout + p.stderr).toBe(3);
    expect(p.stdout).toContain('t (t) was not guarded');
    expect(p.stdout).toContain(`sluice verify`);
    // Guarded again all the same.
    expect(() => runSqliteCli(tgt, "UPDATE t SET a = 'again' WHERE id = 4;")).toThrow(/sluice_protect/);

    const h = await runCliAsync(['health', tgt]);
    expect(h.status, h.stdout).toBe(3);
    expect(h.stdout).toContain('was unguarded since');
    expect(h.stdout).toContain(`sluice verify ${src} ${tgt}`);
    expect((await runCliAsync(['sync', src, tgt])).status).toBe(0);
    expect((await runCliAsync(['health', tgt])).status).toBe(3);
    expect(rowOf(3)).toBe('EDITED');

    const v = await runCliAsync(['verify', src, tgt]);
    expect(v.status, v.stdout).toBe(3);
    const h2 = await runCliAsync(['health', tgt]);
    expect(h2.status).toBe(3);
    expect(h2.stdout).toContain('TARGET_EDITED');
    expect(h2.stdout).not.toContain('was unguarded since');

    expect((await runCliAsync(['reinit', src, tgt, 't'])).status).toBe(0);
    expect(rowOf(3)).toBe('row 3');
    const h3 = await runCliAsync(['health', tgt]);
    expect(h3.status, h3.stdout).toBe(0);
  });

  test('no edit while unguarded: the mark stays through protect and sync until a verify finds the rows equal', async () => {
    dropGuards();
    expect((await runCliAsync(['protect', tgt])).status).toBe(3);
    // Protecting again does not forget it either.
    expect((await runCliAsync(['protect', tgt])).status).toBe(0);
    expect((await runCliAsync(['health', tgt])).status).toBe(3);
    const v = await runCliAsync(['verify', src, tgt]);
    expect(v.status, v.stdout).toBe(0);
    const h = await runCliAsync(['health', tgt]);
    expect(h.status, h.stdout).toBe(0);
  });

  test('sync that makes the dropped guards again keeps the same mark', async () => {
    dropGuards();
    runSqliteCli(tgt, "UPDATE t SET a = 'EDITED' WHERE id = 3;");
    runSqliteCli(src, "UPDATE t SET a = 'new 5' WHERE id = 5;");
    expect((await runCliAsync(['sync', src, tgt])).status).toBe(0);
    expect(() => runSqliteCli(tgt, "UPDATE t SET a = 'again' WHERE id = 4;")).toThrow(/sluice_protect/);
    const h = await runCliAsync(['health', tgt]);
    expect(h.status, h.stdout).toBe(3);
    expect(h.stdout).toContain('was unguarded since');
    expect((await runCliAsync(['verify', src, tgt])).status).toBe(3);
    expect((await runCliAsync(['health', tgt])).stdout).toContain('TARGET_EDITED');
  });
});

describe('the mark of a table found unguarded', () => {
  const marks = () => runSqliteCli(tgt, "SELECT count(*) FROM sqlite_master WHERE name = '_sluice_unguarded';").trim();

  test('goes with a drop, and a projection built again under the name starts clean', async () => {
    dropGuards();
    expect((await runCliAsync(['protect', tgt])).status).toBe(3);
    expect((await runCliAsync(['drop', tgt, 't'])).status).toBe(0);
    expect(marks()).toBe('0');
    const r = await runCliAsync(['sync', src, tgt, '--projection', '*']);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    const h = await runCliAsync(['health', tgt]);
    expect(h.status, h.stdout + h.stderr).toBe(0);
  });

  test('goes with a reinit, which makes the tables anew from the source', async () => {
    dropGuards();
    runSqliteCli(tgt, "UPDATE t SET a = 'EDITED' WHERE id = 3;");
    expect((await runCliAsync(['protect', tgt])).status).toBe(3);
    const r = await runCliAsync(['reinit', src, tgt, 't']);
    expect(r.status, r.stdout + r.stderr).toBe(0);
    expect(rowOf(3)).toBe('row 3');
    expect(marks()).toBe('0');
    expect((await runCliAsync(['health', tgt])).status).toBe(0);
  });

  test('stays through a verify of a custom projection, which compares nothing (NOT_VERIFIABLE)', async () => {
    const mod = at('cnt.mjs');
    fs.writeFileSync(
      mod,
      `export default [{ name: 'cnt', source: 't', kind: 'custom', tables: ['cnt'], handler: {
  version: '1',
  async init(rows, { db, tables }) {
    await db.schema.createTable(tables.cnt).ifNotExists().addColumn('id', 'integer', (c) => c.primaryKey()).addColumn('a', 'text').execute();
    for (const r of rows) await db.insertInto(tables.cnt).values({ id: r.id, a: r.a }).execute();
  },
  async apply(event, { db, tables }) {
    if (event.op === 'delete') await db.deleteFrom(tables.cnt).where('id', '=', event.before.id).execute();
    else await db.insertInto(tables.cnt).values({ id: event.after.id, a: event.after.a }).onConflict((oc) => oc.column('id').doUpdateSet({ a: event.after.a })).execute();
  },
} }];
`,
    );
    const s = await runCliAsync(['sync', src, tgt, '--projection', mod]);
    expect(s.status, s.stdout + s.stderr).toBe(0);
    const names = runSqliteCli(tgt, "SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = 'cnt';").trim().split('\n');
    expect(names.length).toBe(3);
    runSqliteCli(tgt, names.map((n) => `DROP TRIGGER "${n}";`).join('\n') + "\nUPDATE cnt SET a = 'EDITED' WHERE id = 1;");
    expect((await runCliAsync(['protect', tgt])).status).toBe(3);
    const v = await runCliAsync(['verify', src, tgt]);
    expect(v.stdout).toMatch(/cnt: ok .*NOT_VERIFIABLE/);
    const h = await runCliAsync(['health', tgt]);
    expect(h.status, h.stdout + h.stderr).toBe(3);
    expect(h.stdout + h.stderr).toMatch(/cnt/);
  });
});
