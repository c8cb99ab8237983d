// an export file older than the target, written before a `sluice alter` the target was synced past, changes nothing
import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeDir, removeDir, runCliAsync, dumpTables, scalar, type CliResult } from '../cli/support/cli.ts';

/*
 * Review round 7, bug 1. A target synced past a `sluice alter` (ADD COLUMN:
 * its mirror rebuilt, DEFINITION_CHANGED) was given an export file written
 * before the alter: import took the file's snapshot as one it did not hold,
 * because the definition compiled against the file's older table shape has
 * another fingerprint than the one the target holds, and installed it
 * whatever its seq. The mirror went back from seq 2 to 0, lost the added
 * column and the rows written since, a map with a filter beside it went back
 * too while an fts5 index stayed at seq 2 (a target of two histories), and
 * import exited 0 with health green. docs/jsonl.md: "A file older than the
 * target ... changes nothing." Now a snapshot (and batches) at or below
 * where a projection stands changes nothing for it when its definition is
 * the one the target holds (compiled against the target's shape); a
 * definition given that differs, which such a file cannot rebuild the
 * projection by, is refused before anything is committed (IMPORT_NO_SNAPSHOT),
 * naming the projection, the file's seq, the target's and the repair.
 */

const FORMATS = ['jsonl', 'segment'] as const;
type Format = (typeof FORMATS)[number];

const MAP = { name: 'tmap', source: 't', kind: 'map', columns: { id: 'id', tt: 'title' }, filter: 'n > 0' };
const FTS = { name: 'ts', source: 't', kind: 'fts5', columns: ['title'] };

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeEach(() => {
  dir = makeDir();
});
afterEach(() => removeDir(dir));

function sh(file: string, sql: string): void {
  const r = spawnSync('sqlite3', [file, sql], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`sqlite3 ${file}: ${r.stderr}`);
}

async function ok(args: readonly string[]): Promise<CliResult> {
  const r = await runCliAsync(args);
  expect(r.status, `sluice ${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(0);
  return r;
}

function definition(name: string, d: object): string {
  fs.writeFileSync(at(name), JSON.stringify(d));
  return at(name);
}

/** What a target holds: its user tables, the fts5 index's rows, and each projection's seq, cursor, state and stored shape. */
function state(tgt: string, fts: boolean): unknown {
  return {
    tables: dumpTables(tgt),
    fts: fts ? scalar(tgt, "SELECT group_concat(rowid || '=' || title, ',') FROM (SELECT rowid, title FROM ts ORDER BY rowid)") : null,
    projections: scalar(
      tgt,
      "SELECT group_concat(name || ' ' || seq || ' ' || state || ' ' || cursor || ' ' || source_shape, char(10)) FROM (SELECT * FROM _sluice_projections ORDER BY name)",
    ),
  };
}

/**
 * A source t(id, title, n), a target synced from it (a mirror, and with
 * `withOthers` a map with a filter and an fts5 index beside it), an export
 * written then (its snapshot at seq 0, and a batch at seq 1 appended by a
 * second run), then `sluice alter` adding a column, rows written and the
 * target synced past it (seq 3). Returns the old export.
 */
async function setUp(format: Format, withOthers: boolean): Promise<{ src: string; tgt: string; old: string; defs: string[] }> {
  const src = at('src.db');
  const tgt = at('T.db');
  sh(src, "CREATE TABLE t(id INTEGER PRIMARY KEY, title TEXT, n INT); INSERT INTO t VALUES (1, 'one', 1), (2, 'two', 1);");
  await ok(['enable', src, 't']);
  const defs = withOthers ? [definition('tmap.json', MAP), definition('ts.json', FTS)] : [];
  await ok(['sync', src, tgt, ...(withOthers ? ['--projection', '*', ...defs.flatMap((d) => ['--projection', d])] : [])]);
  const old = format === 'segment' ? at('old') : at('old.jsonl');
  const exportArgs = ['export', src, '--out', old, ...(format === 'segment' ? ['--format', 'segment'] : [])];
  await ok(exportArgs);
  sh(src, "UPDATE t SET title = 'uno' WHERE id = 1");
  await ok(exportArgs); // a batch after the snapshot (seq 1)
  await ok(['alter', src, 'ALTER TABLE t ADD COLUMN extra TEXT']);
  sh(src, "UPDATE t SET extra = 'x' WHERE id = 1; INSERT INTO t VALUES (3, 'three', 1, 'e3');");
  await ok(['sync', src, tgt]);
  expect(scalar(tgt, "SELECT group_concat(seq) FROM _sluice_projections WHERE name = 't'")).toBe('3');
  return { src, tgt, old, defs };
}

/** A fresh sync of `src` with the same projections, as `state` reads it. */
async function fresh(src: string, withOthers: boolean, defs: readonly string[]): Promise<unknown> {
  const f = at('fresh.db');
  await ok(['sync', src, f, ...(withOthers ? ['--projection', '*', ...defs.flatMap((d) => ['--projection', d])] : [])]);
  return (state(f, withOthers) as { tables: unknown; fts: unknown }).tables;
}

describe('an export file older than the target, written before an alter the target was synced past', () => {
  for (const format of FORMATS) {
    test(`${format}, a mirror: import changes nothing, exit 0, health and verify pass`, async () => {
      const { src, tgt, old } = await setUp(format, false);
      const before = state(tgt, false);
      const r = await ok(['import', tgt, old]);
      expect(r.stdout).toContain('t: active at seq 3');
      expect(state(tgt, false)).toEqual(before);
      expect(dumpTables(tgt)).toEqual(await fresh(src, false, []));
      await ok(['health', tgt]);
      await ok(['verify', src, tgt]);
    });

    test(`${format}, a mirror, a map with a filter and an fts5 index: import (with the target's definitions, then with them given) changes nothing`, async () => {
      const { src, tgt, old, defs } = await setUp(format, true);
      const before = state(tgt, true);
      await ok(['import', tgt, old]);
      expect(state(tgt, true)).toEqual(before);
      await ok(['import', tgt, old, ...defs.flatMap((d) => ['--projection', d])]);
      expect(state(tgt, true)).toEqual(before);
      expect(dumpTables(tgt)).toEqual(await fresh(src, true, defs));
      await ok(['health', tgt]);
      await ok(['verify', src, tgt]);
    });
  }

  test('with a changed definition given, which the older file cannot rebuild the map by: refused naming the map, both seqs and the repair, nothing committed', async () => {
    const { src, tgt, old, defs } = await setUp('jsonl', true);
    const before = state(tgt, true);
    const changed = definition('tmap2.json', { ...MAP, filter: 'n > 1' });
    const r = await runCliAsync(['import', tgt, old, '--projection', changed, '--projection', defs[1] as string]);
    expect(r.status, r.stdout + r.stderr).toBe(1);
    expect(r.stderr).toContain('IMPORT_NO_SNAPSHOT');
    expect(r.stderr).toContain('projection tmap: the definition given is not the one it was built with (ALTER_FILTER_CHANGED');
    expect(r.stderr).toContain('its snapshot of table t is at seq 0 and it reaches seq 1, before the target');
    expect(r.stderr).toContain('seq 3');
    expect(r.stderr).toContain('sluice export SOURCE --out NEW_FILE');
    expect(state(tgt, true)).toEqual(before);
    // Recorded for health, with the refusal.
    const h = await runCliAsync(['health', tgt]);
    expect(h.status, h.stdout + h.stderr).toBe(3);
    expect(h.stdout + h.stderr).toContain('IMPORT_NO_SNAPSHOT');
    // A new export with the changed definition rebuilds the map by it.
    await ok(['export', src, '--out', at('new.jsonl')]);
    await ok(['import', tgt, at('new.jsonl'), '--projection', changed, '--projection', defs[1] as string]);
    await ok(['health', tgt]);
    expect(scalar(tgt, 'SELECT count(*) FROM tmap')).toBe(0n);
    await ok(['verify', src, tgt]);
  });
});
