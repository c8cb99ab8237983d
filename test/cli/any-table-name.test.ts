// any table name syncs verifies reinits exports and imports under its default projection
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { openDatabase, quoteIdent } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { compileProjection, type SourceShape } from '../../src/projection/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, dumpTables } from './support/cli.ts';

/*
 * `sluice sync` with no definitions mirrors every captured table under a
 * name made from the table's. Tables whose names are not valid projection
 * names (a leading "_", spaces, "$", quotes, non-ASCII letters, two tables
 * that differ only in non-ASCII case) must work through every command, and
 * so must a target an earlier version made with such a name stored as it is.
 */

const TABLES = ['issues', '_audit', 'my table', 'Order$Lines', 'naïve', 'Ünïcode', 'quo"te', "it's", 'é', 'É'];

let dir: string;
let src: string;
const at = (f: string) => path.join(dir, f);
const q = quoteIdent;

/** One round of changes to every table, by an external writer (Python's sqlite3). */
function writeRound(round: number): void {
  const sql = TABLES.map(
    (t) =>
      `INSERT INTO ${q(t)} (v) VALUES ('round ${round}'); UPDATE ${q(t)} SET v = v || '+' WHERE id = 1; DELETE FROM ${q(t)} WHERE id = (SELECT min(id) FROM ${q(t)} WHERE id > 1);`,
  ).join('\n');
  runPython('import sqlite3, sys\ncon = sqlite3.connect(sys.argv[1])\ncon.executescript(sys.argv[2])\ncon.commit()', [src, sql]);
}

async function cli(args: string[], expected = 0) {
  const r = await runCliAsync([...args, '--json']);
  expect(r.status, `${args.join(' ')}: ${r.stderr}`).toBe(expected);
  return r;
}

const userTables = (file: string) => Object.fromEntries(Object.entries(dumpTables(file)).filter(([t]) => TABLES.includes(t)));

beforeAll(() => {
  dir = makeDir();
  src = at('app.db');
  const db = openDatabase(src, { create: true });
  try {
    for (const t of TABLES)
      db.exec(
        `CREATE TABLE ${q(t)} (id INTEGER PRIMARY KEY, v TEXT, ${q(`${t} col`)} BLOB); INSERT INTO ${q(t)} (id, v) VALUES (1, 'one'), (2, 'two'), (3, 'three')`,
      );
    enable(db, TABLES);
  } finally {
    db.close();
  }
});
afterAll(() => removeDir(dir));

describe('every table name under its default projection', () => {
  test('sync, a second sync after changes, verify and health all succeed for every table, in one target', async () => {
    const tgt = at('cache.db');
    const first = parseJson(await cli(['sync', src, tgt]), S.syncOutput);
    expect(first.projections).toHaveLength(TABLES.length);
    expect(first.projections.every((p) => p.state === 'active')).toBe(true);
    expect(new Set(first.projections.map((p) => p.name)).size).toBe(TABLES.length);
    expect(first.projections.map((p) => p.name)).toContain('issues');
    writeRound(1);
    const second = parseJson(await cli(['sync', src, tgt]), S.syncOutput);
    expect(second.projections.map((p) => [p.state, p.applied, p.rebuilt])).toEqual(TABLES.map(() => ['active', 3, undefined]));
    expect(userTables(tgt)).toEqual(userTables(src));

    const v = parseJson(await cli(['verify', src, tgt]), S.verifyOutput);
    expect(v.ok).toBe(true);
    expect(v.projections.map((p) => p.checked)).toEqual(TABLES.map(() => 2 + 1));
    const h = parseJson(await cli(['health', tgt]), S.healthOutput);
    expect(h.ok).toBe(true);
    expect(h.projections.map((p) => [p.state, p.lagEvents])).toEqual(TABLES.map(() => ['active', 0]));
  });

  test('--reinit rebuilds each projection by the name sync reports, and by its table name', async () => {
    const tgt = at('reinit.db');
    const names = parseJson(await cli(['sync', src, tgt]), S.syncOutput).projections.map((p) => p.name);
    const byName = parseJson(await cli(['sync', src, tgt, ...names.flatMap((n) => ['--reinit', n])]), S.syncOutput);
    expect(byName.projections.map((p) => p.rebuilt)).toEqual(TABLES.map(() => 'REINIT'));
    const byTable = parseJson(await cli(['sync', src, tgt, '--reinit', 'my table', '--reinit', 'É']), S.syncOutput);
    expect(
      byTable.projections
        .filter((p) => p.rebuilt === 'REINIT')
        .map((p) => p.name)
        .sort(),
    ).toEqual([names[TABLES.indexOf('my table')], names[TABLES.indexOf('É')]].sort());
    expect(parseJson(await cli(['verify', src, tgt]), S.verifyOutput).ok).toBe(true);
  });

  test('export then import, twice, gives the target sync gives', async () => {
    const file = at('stream.jsonl');
    const imported = at('imported.db');
    await cli(['export', src, '--out', file]);
    const first = parseJson(await cli(['import', imported, file]), S.importOutput);
    expect(first.projections.map((p) => p.state)).toEqual(TABLES.map(() => 'active'));
    writeRound(2);
    await cli(['export', src, '--out', file]);
    const second = parseJson(await cli(['import', imported, file]), S.importOutput);
    expect(second.batchesApplied).toBeGreaterThan(0);
    const synced = at('synced-for-import.db');
    await cli(['sync', src, synced]);
    expect(userTables(imported)).toEqual(userTables(synced));
    expect(userTables(imported)).toEqual(userTables(src));
  });
});

/**
 * Rewrites every projection row the way sluice did before default names were
 * escaped: the projection named exactly like its table, its stored
 * definition `{ name: table, source: table, kind: 'mirror' }`, and the
 * fingerprint of that definition; the source's acknowledgements of them
 * carry the same names.
 */
function makeLegacy(target: string): void {
  const db = openDatabase(target);
  // The source acknowledged them under those names too (`<projection>@<target's real path>`; none for an import).
  const source = openDatabase(src);
  const suffix = `@${fs.realpathSync(target)}`;
  try {
    const rows = db.prepare('SELECT name, source_table, source_shape FROM _sluice_projections').all() as {
      name: string;
      source_table: string;
      source_shape: string;
    }[];
    for (const r of rows) {
      const def = { name: r.source_table, source: r.source_table, kind: 'mirror' as const };
      const fp = compileProjection(def, JSON.parse(r.source_shape) as SourceShape).fingerprint;
      db.prepare('UPDATE _sluice_projections SET name = ?, definition = ?, fingerprint = ? WHERE name = ?').run(
        def.name,
        JSON.stringify(def),
        fp,
        r.name,
      );
      source.prepare('UPDATE _sluice_consumers SET name = ? WHERE name = ?').run(def.name + suffix, r.name + suffix);
    }
  } finally {
    db.close();
    source.close();
  }
}

describe('a target made before default names were escaped', () => {
  test('keeps its projections under their old names: sync applies without a rebuild, verify, health and --reinit work', async () => {
    const tgt = at('legacy.db');
    await cli(['sync', src, tgt]);
    makeLegacy(tgt);
    writeRound(3);
    const s = parseJson(await cli(['sync', src, tgt]), S.syncOutput);
    expect(s.projections.map((p) => [p.name, p.state, p.applied, p.rebuilt])).toEqual(
      [...TABLES].sort().map((t) => [t, 'active', 3, undefined]),
    );
    expect(userTables(tgt)).toEqual(userTables(src));
    expect(parseJson(await cli(['verify', src, tgt]), S.verifyOutput).ok).toBe(true);
    expect(parseJson(await cli(['health', tgt]), S.healthOutput).ok).toBe(true);
    const r = parseJson(await cli(['sync', src, tgt, '--reinit', '_audit', '--reinit', 'quo"te']), S.syncOutput);
    expect(
      r.projections
        .filter((p) => p.rebuilt === 'REINIT')
        .map((p) => p.name)
        .sort(),
    ).toEqual(['_audit', 'quo"te']);
  });

  test('an import into it goes on from its stored cursors', async () => {
    const file = at('legacy.jsonl');
    const imported = at('legacy-imported.db');
    await cli(['export', src, '--out', file]);
    await cli(['import', imported, file]);
    makeLegacy(imported);
    writeRound(4);
    await cli(['export', src, '--out', file]);
    const r = parseJson(await cli(['import', imported, file]), S.importOutput);
    expect(r.batchesApplied).toBeGreaterThan(0);
    expect(r.projections.map((p) => p.state)).toEqual(TABLES.map(() => 'active'));
    expect(userTables(imported)).toEqual(userTables(src));
  });
});
