// sync continues a compatible change rebuilds a rebuildable one and refuses a rejected one writing nothing
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { alter } from '../../../src/capture/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { explainAlter } from '../../../src/apply/evolution/index.ts';
import { openDatabase, describeTable } from '../../../src/sqlite/index.ts';
import { compileProjection, sourceShape, parseDefinition, type ProjectionDefinitionInput } from '../../../src/projection/index.ts';
import { runCliAsync } from '../../cli/support/cli.ts';
import { countingHandler, projections, run, syncedPair, tablesOf } from '../support/explain.ts';

/*
 * 003's LC-1 as sync runs it: a changed definition is classified as
 * explain classifies it, before anything is written. A Compatible change
 * keeps the projection's rows and cursor (its new definition is stored and
 * it goes on), a Rebuildable one is rebuilt, and a Rejected one is refused
 * with its reason and repair, its tables, cursor and definition as they
 * were (only the failure is recorded, so that health shows it), while the
 * other projections of the same sync go on.
 */

/** The projection's row in the target's catalog: every column but those of a recorded failure. */
function rowOf(file: string, name: string): unknown {
  const {
    last_error: _e,
    last_error_code: _c,
    last_error_ms: _m,
    failures: _f,
    updated_ms: _u,
    ...state
  } = fullRowOf(file, name) as Record<string, unknown>;
  return state;
}

/** The last failure recorded for a projection (what health reports). */
function failureOf(file: string, name: string): { code: unknown; message: unknown } {
  const r = fullRowOf(file, name) as Record<string, unknown>;
  return { code: r.last_error_code, message: r.last_error };
}

/** The projection's row in the target's catalog, every column. */
function fullRowOf(file: string, name: string): unknown {
  const db = openDatabase(file, { readonly: true });
  try {
    return db.prepare('SELECT * FROM _sluice_projections WHERE name = ?').get(name);
  } finally {
    db.close();
  }
}

function fingerprintOf(src: string, def: ProjectionDefinitionInput): string {
  const db = openDatabase(src, { readonly: true });
  try {
    const d = parseDefinition(def);
    const info = describeTable(db, d.source);
    if (info === undefined) throw new Error('no source table');
    return compileProjection(d, sourceShape(info)).fingerprint;
  } finally {
    db.close();
  }
}

const [ITEMS, CHEAP, SEARCH] = projections() as [ProjectionDefinitionInput, ProjectionDefinitionInput, ProjectionDefinitionInput];

describe('sync follows the classification of a changed definition', () => {
  test('test_alter_query_proves_materialized_result_frontier_row_identity_auxiliary_state: sync continues a Compatible change of a mirror, a map and an fts5 index from its cursor, its rows (and fts5 rowids) untouched, no snapshot, and later writes apply under the new definition', async ({
    tmp,
  }) => {
    const { src, tgt } = await syncedPair(tmp);
    const changed: ProjectionDefinitionInput[] = [
      // Its default target spelled out: the same projection, another fingerprint.
      { ...ITEMS, target: 'items' } as ProjectionDefinitionInput,
      // Loosened for rows that do not exist: every qty is below 100.
      { ...CHEAP, filter: 'qty < 1000' } as ProjectionDefinitionInput,
      { ...SEARCH, target: 'search' } as ProjectionDefinitionInput,
    ];
    const explained = await explainAlter(src, tgt, { projections: changed });
    expect(explained.projections.map((p) => [p.name, p.classification])).toEqual([
      ['items', 'Compatible'],
      ['cheap', 'Compatible'],
      ['search', 'Compatible'],
    ]);
    const before = Object.fromEntries(['items', 'cheap', 'search'].map((n) => [n, tablesOf(tgt, n)]));
    expect(Object.keys(before.search ?? {})).toEqual(expect.arrayContaining(['search', 'search_src', 'search_data']));
    const cursors = Object.fromEntries(['items', 'cheap', 'search'].map((n) => [n, (rowOf(tgt, n) as { cursor: string }).cursor]));

    const r = await sync(src, tgt, { projections: changed });
    for (const p of r.projections) {
      expect([p.name, p.state, p.rebuilt, p.snapshotRows, p.swapped, p.error], p.name).toEqual([
        p.name,
        'active',
        undefined,
        undefined,
        undefined,
        undefined,
      ]);
    }
    for (const n of ['items', 'cheap', 'search']) {
      expect(tablesOf(tgt, n), n).toEqual(before[n]);
      const row = rowOf(tgt, n) as { cursor: string; fingerprint: string; definition: string };
      // The same cursor, and the new definition stored with it (the next plain sync runs it).
      expect(row.cursor, n).toBe(cursors[n]);
      expect(row.fingerprint, n).toBe(fingerprintOf(src, changed.find((d) => d.name === n) as ProjectionDefinitionInput));
    }
    expect(JSON.parse((rowOf(tgt, 'cheap') as { definition: string }).definition).filter).toBe('qty < 1000');

    // Later writes apply, under the new definition: qty 500 is in the loosened filter.
    run(src, "INSERT INTO items (id, name, qty) VALUES (9, 'fig roll', 500); UPDATE items SET name = 'apple crumble' WHERE id = 1");
    // A plain sync runs the stored definitions: the new ones (log, a custom handler given as code, has none stored).
    const again = await sync(src, tgt);
    const ran = again.projections.filter((p) => p.name !== 'log');
    expect(ran.map((p) => [p.name, p.state, p.rebuilt, p.applied]).sort()).toEqual([
      ['cheap', 'active', undefined, 2],
      ['items', 'active', undefined, 2],
      ['search', 'active', undefined, 2],
    ]);
    const db = openDatabase(tgt, { readonly: true });
    try {
      expect(db.prepare('SELECT id, label FROM cheap WHERE id IN (1, 9) ORDER BY id').raw().all()).toEqual([
        [1n, 'apple crumble'],
        [9n, 'fig roll'],
      ]);
      expect(db.prepare("SELECT count(*) FROM search WHERE search MATCH 'fig'").pluck().get()).toBe(1n);
    } finally {
      db.close();
    }
    const verified = (await verify(src, tgt)).projections.filter((p) => p.name !== 'log');
    expect(verified.map((p) => [p.name, p.ok]).sort()).toEqual([
      ['cheap', true],
      ['items', true],
      ['search', true],
    ]);
  });

  test('sync refuses a Rejected change before anything is written: the projection keeps its tables, cursor and definition, the refusal is recorded for health, the error names it, the rule and the repair, and the other projections go on', async ({
    tmp,
  }) => {
    const { src, tgt } = await syncedPair(tmp);
    // The custom handler changed, and it declares no tables a shadow could replace: Rejected (ALTER_CUSTOM_NO_SHADOW).
    const defs: ProjectionDefinitionInput[] = [
      ITEMS,
      { ...CHEAP, filter: 'qty < 10' } as ProjectionDefinitionInput,
      SEARCH,
      { name: 'log', source: 'items', kind: 'custom', handler: countingHandler('2') },
    ];
    const explained = await explainAlter(src, tgt, { projections: defs });
    expect(explained.projections.find((p) => p.name === 'log')).toMatchObject({
      classification: 'Rejected',
      reason: 'ALTER_CUSTOM_NO_SHADOW',
    });
    run(src, "INSERT INTO items (id, name, qty) VALUES (9, 'fig roll', 2)");
    const tables = tablesOf(tgt, 'ops');
    expect(Object.keys(tables)).toEqual(['ops']);
    const row = rowOf(tgt, 'log');

    const r = await sync(src, tgt, { projections: defs });
    const log = r.projections.find((p) => p.name === 'log');
    expect(log?.error?.code).toBe('ALTER_CUSTOM_NO_SHADOW');
    expect(log?.error?.message).toMatch(
      /^Projection log: its change is Rejected \(ALTER_CUSTOM_NO_SHADOW\): .*declares no tables of its own/,
    );
    expect(log?.error?.message).toContain('Nothing was written');
    expect(log?.error?.message).toContain(`sluice reinit ${src} ${tgt} log`);
    expect([log?.rebuilt, log?.snapshotRows]).toEqual([undefined, undefined]);
    expect(tablesOf(tgt, 'ops')).toEqual(tables);
    // Its row is as it was (definition, fingerprint, cursor, state), but for the failure recorded, which health reports.
    expect(rowOf(tgt, 'log')).toEqual(row);
    expect(failureOf(tgt, 'log')).toEqual({ code: 'ALTER_CUSTOM_NO_SHADOW', message: log?.error?.message });
    // The others went on: a Rebuildable change rebuilt, an unchanged one applied the write.
    expect(r.projections.filter((p) => p.name !== 'log').map((p) => [p.name, p.state, p.rebuilt ?? null, p.error])).toEqual([
      ['items', 'active', null, undefined],
      ['cheap', 'active', 'DEFINITION_CHANGED', undefined],
      ['search', 'active', null, undefined],
    ]);

    // The repair it names: a rebuild in place, which the user accepts by asking for it.
    const repaired = await sync(src, tgt, { projections: defs, reinit: ['log'] });
    expect(repaired.projections.find((p) => p.name === 'log')).toMatchObject({ state: 'active', rebuilt: 'REINIT' });
  });

  test('test_schema_evolution_additive_column_continues_or_rebuilds: after sluice alter adds a column, the fts5 index and the filtered map that do not read it continue, the mirror is rebuilt, and a custom projection with no tables of its own is refused as explain says, until its repair runs', async ({
    tmp,
  }) => {
    const { src, tgt } = await syncedPair(tmp);
    const db = openDatabase(src);
    try {
      alter(db, "ALTER TABLE items ADD COLUMN colour TEXT DEFAULT 'red'");
    } finally {
      db.close();
    }
    const defs = projections();
    const log = (await explainAlter(src, tgt, { projections: defs })).projections.find((p) => p.name === 'log');
    expect([log?.classification, log?.reason]).toEqual(['Rejected', 'ALTER_CUSTOM_NO_SHADOW']);
    const row = rowOf(tgt, 'log');
    const r = await sync(src, tgt, { projections: defs });
    expect(r.projections.map((p) => [p.name, p.state, p.rebuilt ?? null, p.error?.code ?? null])).toEqual([
      ['items', 'active', 'DEFINITION_CHANGED', null],
      // A filter is SQL: its fingerprint covers the whole shape, so it is classified; it does not read the column,
      // and sluice alter's recorded DDL keeps its cursor: Compatible, so it goes on.
      ['cheap', 'active', null, null],
      // Its fingerprint covers the columns it reads only, and sluice alter keeps its cursor: not a changed definition.
      ['search', 'active', null, null],
      ['log', 'active', null, 'ALTER_CUSTOM_NO_SHADOW'],
    ]);
    expect(rowOf(tgt, 'log')).toEqual(row);
    const repaired = await sync(src, tgt, { projections: defs, reinit: ['log'] });
    expect(repaired.projections.map((p) => [p.name, p.rebuilt ?? null, p.error?.code ?? null])).toEqual([
      ['items', null, null],
      ['cheap', null, null],
      ['search', null, null],
      ['log', 'REINIT', null],
    ]);
  });

  test('the sync command exits 1 for a Rejected change and prints the projection, the reason and the repair on stderr', async ({ tmp }) => {
    const { src, tgt } = await syncedPair(tmp, [ITEMS]);
    const handler = (version: string) =>
      fs.writeFileSync(path.join(tmp, 'counts.mjs'), `export default { version: '${version}', apply() {} };\n`);
    handler('1');
    const def = path.join(tmp, 'counts.json');
    fs.writeFileSync(def, JSON.stringify({ name: 'counts', source: 'items', kind: 'custom', module: './counts.mjs' }));
    const mirror = path.join(tmp, 'items.json');
    fs.writeFileSync(mirror, JSON.stringify(ITEMS));
    const first = await runCliAsync(['sync', src, tgt, '--projection', mirror, '--projection', def]);
    expect(first.status, first.stderr).toBe(0);
    handler('2');
    const row = rowOf(tgt, 'counts');
    run(src, "INSERT INTO items (id, name, qty) VALUES (9, 'fig roll', 2)");
    const r = await runCliAsync(['sync', src, tgt, '--projection', mirror, '--projection', def]);
    expect(r.status, r.stderr).toBe(1);
    expect(r.stderr).toMatch(/ALTER_CUSTOM_NO_SHADOW: projection counts: .*Rejected/);
    expect(r.stderr).toContain(`sluice reinit ${src} ${tgt} counts`);
    expect(rowOf(tgt, 'counts')).toEqual(row);
    // Not silently stale: health names the refusal and its repair.
    const h = await runCliAsync(['health', tgt]);
    expect(h.status, h.stdout).toBe(3);
    expect(h.stdout + h.stderr).toContain('ALTER_CUSTOM_NO_SHADOW');
    expect(h.stdout + h.stderr).toContain(`sluice reinit ${src} ${tgt} counts`);
    // The mirror went on.
    const db = openDatabase(tgt, { readonly: true });
    try {
      expect(db.prepare('SELECT name FROM items WHERE id = 9').pluck().get()).toBe('fig roll');
    } finally {
      db.close();
    }
  });
});
