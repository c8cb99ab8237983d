// source ddl makes each projection continue rebuild or suspend with its reason never stale
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { enable, disable, alter } from '../../../src/capture/index.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { verify, health } from '../../../src/apply/check/index.ts';
import type { ProjectionDefinitionInput } from '../../../src/projection/index.ts';
import { countingHandler } from '../support/explain.ts';
import { runCliAsync } from '../../cli/support/cli.ts';

/*
 * 003's LC-2 transitions on a SQLite source: each DDL leaves every
 * projection (mirror, map, fts5, custom where it applies) continuing,
 * rebuilt, or suspended with a stable reason code that health shows with
 * the command that repairs it; never silently stale. A table dropped and
 * made again, or a source whose identity changed, is a new dependency: the
 * old cursor's proof is never reused, even when the events after it would
 * apply cleanly.
 */

const SCHEMA = `CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT);
INSERT INTO t VALUES (1, 'a1', 'b one'), (2, 'a2', 'b two');`;

const DEFS: ProjectionDefinitionInput[] = [
  { name: 'mirror_t', source: 't', kind: 'mirror' },
  { name: 'map_b', source: 't', kind: 'map', columns: { id: 'id', b: 'b' } },
  { name: 'fts_b', source: 't', kind: 'fts5', columns: ['b'] },
  { name: 'map_a', source: 't', kind: 'map', columns: { id: 'id', a: 'a' } },
];

type Outcome = [string, string, string | null];
const outcomes = (r: Awaited<ReturnType<typeof sync>>): Outcome[] =>
  r.projections.map((p): Outcome => [p.name, p.state, p.rebuilt ?? p.reason ?? null]).sort((x, y) => x[0].localeCompare(y[0]));

async function setUp(makeDb: (name?: string, schema?: string) => { db: Db; file: string }, tmp: string, defs = DEFS) {
  const { db, file } = makeDb('app.db', SCHEMA);
  enable(db, ['t']);
  const target = path.join(tmp, 'cache.db');
  await sync(file, target, { projections: defs });
  return { db, file, target };
}

function cells(file: string, sql: string): unknown[] {
  const db = openDatabase(file, { readonly: true });
  try {
    return db.prepare(sql).raw().all();
  } finally {
    db.close();
  }
}

/** verify of every projection: [name, ok]. */
async function verified(src: string, tgt: string): Promise<[string, boolean][]> {
  return (await verify(src, tgt)).projections.map((p): [string, boolean] => [p.name, p.ok]).sort((x, y) => x[0].localeCompare(y[0]));
}

describe('source DDL', () => {
  test('test_schema_evolution_destructive_column_suspends_with_reason_code: a dropped column a map or fts5 index reads suspends it with SOURCE_COLUMN_MISSING; health shows the code and the exact commands, and running them turns health green', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file, target } = await setUp(makeDb, tmp);
    alter(db, 'ALTER TABLE t DROP COLUMN b');
    db.exec("UPDATE t SET a = 'a1 after' WHERE id = 1");
    const s = await sync(file, target);
    expect(outcomes(s)).toEqual([
      ['fts_b', 'suspended', 'SOURCE_COLUMN_MISSING'],
      ['map_a', 'active', null],
      ['map_b', 'suspended', 'SOURCE_COLUMN_MISSING'],
      ['mirror_t', 'active', 'DEFINITION_CHANGED'],
    ]);
    const h = health(target);
    expect(h.ok).toBe(false);
    const of = (name: string) => h.projections.find((p) => p.name === name);
    for (const name of ['map_b', 'fts_b']) {
      expect([of(name)?.state, of(name)?.reason, of(name)?.needsAction], name).toEqual(['suspended', 'SOURCE_COLUMN_MISSING', true]);
      expect(of(name)?.action).toContain(
        `write a definition of ${name} that fits the source to a file and pass it with --projection to sluice sync ${file} ${target}`,
      );
      expect(of(name)?.action).toContain(`sluice drop ${target} ${name}`);
    }
    for (const name of ['map_a', 'mirror_t']) expect(of(name)?.needsAction, name).toBe(false);

    // map_b: the definition that fits the source, as the repair says; fts_b: removed, as it also says.
    const defFile = path.join(tmp, 'map_b.json');
    fs.writeFileSync(defFile, JSON.stringify({ name: 'map_b', source: 't', kind: 'map', columns: { id: 'id', a: 'a' } }));
    const refit = await runCliAsync(['sync', file, target, '--projection', defFile]);
    expect(refit.status, refit.stderr).toBe(0);
    const drop = /sluice drop (\S+) (\S+)/.exec(of('fts_b')?.action ?? '');
    const dropped = await runCliAsync(['drop', drop?.[1] ?? '', drop?.[2] ?? '']);
    expect(dropped.status, dropped.stderr).toBe(0);
    const after = health(target);
    expect(
      after.projections.map((p) => [p.name, p.state, p.needsAction]),
      JSON.stringify(after.projections.map((p) => p.problems)),
    ).toEqual([
      ['map_a', 'active', false],
      ['map_b', 'active', false],
      ['mirror_t', 'active', false],
    ]);
    expect(after.ok).toBe(true);
    expect(cells(target, 'SELECT * FROM map_b ORDER BY id')).toEqual([
      [1n, 'a1 after'],
      [2n, 'a2'],
    ]);
    expect(await verified(file, target)).toEqual([
      ['map_a', true],
      ['map_b', true],
      ['mirror_t', true],
    ]);
  });

  test('test_schema_evolution_rename_chain_preserves_or_suspends_explicitly: a column renamed b -> b2 -> b3 -> b is followed by a mirror, suspends what reads it with its code at each link, and rebuilds it when the name comes back; a table renamed away and back rebuilds; never stale', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file, target } = await setUp(makeDb, tmp);
    const links: Outcome[][] = [];
    for (const [i, [from, to]] of [
      ['b', 'b2'],
      ['b2', 'b3'],
      ['b3', 'b'],
    ].entries()) {
      alter(db, `ALTER TABLE t RENAME COLUMN ${from} TO ${to}`);
      db.exec(`UPDATE t SET ${to} = 'b after ${i}' WHERE id = 1; UPDATE t SET a = 'a after ${i}' WHERE id = 2`);
      links.push(outcomes(await sync(file, target)));
      // Whatever is active is exactly the source; whatever is not is suspended with its code (never active and stale).
      const v = await verify(file, target);
      for (const p of v.projections) {
        const state = links[i]?.find((o) => o[0] === p.name);
        if (state?.[1] === 'active') expect(p.ok, `${p.name} after ${from} -> ${to}`).toBe(true);
        else expect(state, p.name).toEqual([p.name, 'suspended', 'SOURCE_COLUMN_MISSING']);
      }
    }
    const renamedAway: Outcome[] = [
      ['fts_b', 'suspended', 'SOURCE_COLUMN_MISSING'],
      ['map_a', 'active', null],
      ['map_b', 'suspended', 'SOURCE_COLUMN_MISSING'],
      ['mirror_t', 'active', 'DEFINITION_CHANGED'],
    ];
    expect(links).toEqual([
      renamedAway,
      renamedAway,
      [
        ['fts_b', 'active', 'DEFINITION_CHANGED'],
        ['map_a', 'active', null],
        ['map_b', 'active', 'DEFINITION_CHANGED'],
        ['mirror_t', 'active', 'DEFINITION_CHANGED'],
      ],
    ]);
    expect(cells(target, 'SELECT * FROM map_b ORDER BY id')).toEqual([
      [1n, 'b after 2'],
      [2n, 'b two'],
    ]);

    // The table renamed away (its projections suspend: the table they name is gone) and back (a new identity: rebuilt).
    alter(db, 'ALTER TABLE t RENAME TO t_old');
    const away = outcomes(await sync(file, target));
    for (const [name, state, reason] of away) expect([name, state, reason]).toEqual([name, 'suspended', 'SOURCE_TABLE_MISSING']);
    alter(db, 'ALTER TABLE t_old RENAME TO t');
    db.exec("UPDATE t SET b = 'b back' WHERE id = 2");
    const back = outcomes(await sync(file, target));
    for (const [name, state, reason] of back)
      expect([name, state, reason === null ? null : 'rebuilt']).toEqual([name, 'active', 'rebuilt']);
    expect((await verified(file, target)).every(([, ok]) => ok)).toBe(true);
  });

  test('test_schema_evolution_recreated_object_oid_is_not_reused: a table dropped and made again under the same name (capture moved aside by hand) rebuilds every projection, although the events after it would apply cleanly to the old rows', async ({
    makeDb,
    tmp,
  }) => {
    const defs = [...DEFS, { name: 'log', source: 't', kind: 'custom', handler: countingHandler() } as ProjectionDefinitionInput];
    const { db, file, target } = await setUp(makeDb, tmp, defs);
    // Same name, same columns, same key; row 1 is gone and row 2 differs. No event says so.
    db.exec(`DROP TABLE t; CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT); INSERT INTO t VALUES (2, 'a2 new', 'b two new');`);
    // Events after it that the old rows would take without a complaint: new keys only.
    const s0 = await sync(file, target, { projections: defs });
    // The custom handler was given the new table's rows again (init: one row), not the old count of two.
    expect(cells(target, 'SELECT n FROM ops')).toEqual([[1n]]);
    db.exec("INSERT INTO t VALUES (3, 'a3', 'b three'), (4, 'a4', 'b four')");
    expect(outcomes(s0).map(([n, st, r]) => [n, st, r === 'CAPTURE_REARMED' || r === 'TABLE_REARMED' ? 'new identity' : r])).toEqual([
      ['fts_b', 'active', 'new identity'],
      ['log', 'active', 'new identity'],
      ['map_a', 'active', 'new identity'],
      ['map_b', 'active', 'new identity'],
      ['mirror_t', 'active', 'new identity'],
    ]);
    const s1 = await sync(file, target, { projections: defs });
    expect(outcomes(s1).every(([, st, r]) => st === 'active' && r === null)).toBe(true);
    expect(cells(target, 'SELECT id, a FROM map_a ORDER BY id')).toEqual([
      [2n, 'a2 new'],
      [3n, 'a3'],
      [4n, 'a4'],
    ]);
    expect(cells(target, "SELECT count(*) FROM fts_b WHERE fts_b MATCH 'one'")).toEqual([[0n]]);
    expect((await verified(file, target)).every(([, ok]) => ok)).toBe(true);
  });

  test('test_schema_evolution_dependency_oid_change_invalidates_proof: capture disabled and enabled again, or the source file replaced by another with the same table, is a new source identity: every projection rebuilds (SOURCE_CHANGED) instead of applying the history after its cursor', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file, target } = await setUp(makeDb, tmp);
    db.exec("UPDATE t SET a = 'a1 x' WHERE id = 1; UPDATE t SET a = 'a1 y' WHERE id = 1");
    await sync(file, target);
    // 1. The capture dropped and made again: a write in between is in no journal.
    disable(db);
    db.exec("UPDATE t SET b = 'b unseen' WHERE id = 2");
    enable(db, ['t']);
    db.exec("INSERT INTO t VALUES (3, 'a3', 'b three'), (4, 'a4', 'b four'), (5, 'a5', 'b five')");
    const s = await sync(file, target);
    expect(outcomes(s).map(([n, st, r]) => [n, st, r])).toEqual(DEFS.map((d) => [d.name, 'active', 'SOURCE_CHANGED']).sort());
    expect(cells(target, 'SELECT b FROM map_b WHERE id = 2')).toEqual([['b unseen']]);
    expect((await verified(file, target)).every(([, ok]) => ok)).toBe(true);

    // 2. Another database at the same path: same table, a journal long enough to pass the cursor, new keys after it.
    const other = path.join(tmp, 'other.db');
    const o = openDatabase(other, { create: true });
    o.exec(`CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT); INSERT INTO t VALUES (1, 'other a1', 'other b1')`);
    enable(o, ['t']);
    for (let i = 10; i < 30; i++) o.exec(`INSERT INTO t VALUES (${i}, 'a${i}', 'b${i}')`);
    o.pragma('journal_mode = DELETE');
    o.close();
    db.close();
    for (const suffix of ['', '-wal', '-shm']) fs.rmSync(file + suffix, { force: true });
    fs.copyFileSync(other, file);
    const r = await sync(file, target);
    expect(outcomes(r).map(([n, st, x]) => [n, st, x])).toEqual(DEFS.map((d) => [d.name, 'active', 'SOURCE_CHANGED']).sort());
    expect(cells(target, 'SELECT count(*), min(id) FROM map_a')).toEqual([[21n, 1n]]);
    expect(cells(target, 'SELECT a FROM map_a WHERE id = 1')).toEqual([['other a1']]);
    expect((await verified(file, target)).every(([, ok]) => ok)).toBe(true);
  });
});
