import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import type { z } from 'zod';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { enable } from '../../../src/capture/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { runCliAsync, parseJson } from './cli.ts';

/*
 * A source table `t` and four projections that read its column `a` in each
 * way a definition can: a map's plain column, a map's computed column, a
 * map's filter, and an fts5 index. The checks read what each projection
 * holds and compare it with what it would hold if built from the source
 * now, so "exact" is not taken from sluice's own word (verify).
 */

export const T_SCHEMA = `
CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT, n INTEGER);
INSERT INTO t VALUES (1, 'one', 'uno', 1), (2, 'two', 'dos', 2), (3, 'three', 'tres', 3);`;

export const READERS_OF_A = [
  { name: 'm', source: 't', kind: 'map', columns: { id: 'id', a: 'a' } },
  { name: 'mc', source: 't', kind: 'map', columns: { id: 'id', up: { expr: 'upper(a)' }, b: 'b' } },
  { name: 'mf', source: 't', kind: 'map', columns: { id: 'id', b: 'b' }, filter: "a LIKE 't%'" },
  { name: 'f', source: 't', kind: 'fts5', columns: ['a'] },
] as const;

export const NAMES = READERS_OF_A.map((p) => p.name);

/** Every word the table's text columns ever hold in these tests (what an fts5 index is asked for). */
const WORDS = ['one', 'two', 'three', 'uno', 'dos', 'tres', 'x', 'changed'];

/** app.db with `t` captured, and cache.db synced with READERS_OF_A (from a definition file, defs.json). */
export async function readersOfA(dir: string): Promise<{ src: string; tgt: string; defs: string }> {
  const src = path.join(dir, 'app.db');
  const tgt = path.join(dir, 'cache.db');
  const defs = path.join(dir, 'defs.json');
  fs.writeFileSync(defs, JSON.stringify(READERS_OF_A));
  const db = openDatabase(src, { create: true, wal: true });
  try {
    db.exec(T_SCHEMA);
    enable(db, ['t']);
  } finally {
    db.close();
  }
  await sync(src, tgt, { projections: READERS_OF_A as never });
  return { src, tgt, defs };
}

function all(file: string, sql: string, ...params: unknown[]): unknown[][] {
  const db = openDatabase(file, { readonly: true });
  try {
    return db
      .prepare(sql)
      .raw()
      .all(...params) as unknown[][];
  } finally {
    db.close();
  }
}

/** READERS_OF_A with every `a` read as source column `column` instead (the definitions that fit a source without `a`). */
export function readersOf(column: string): unknown[] {
  return JSON.parse(JSON.stringify(READERS_OF_A).replace(/\ba\b/g, column)) as unknown[];
}

/** Rows, or the error that reading them gave (a projection whose table has other columns than asked for). */
function held(file: string, sql: string, ...params: unknown[]): unknown {
  try {
    return all(file, sql, ...params);
  } catch (err) {
    return { error: (err as Error).message };
  }
}

/**
 * What each projection holds now, and what it would hold built from the
 * source now (reading `column` where READERS_OF_A read `a`).
 */
export function contents(src: string, tgt: string, column = 'a'): Record<string, { held: unknown; fromSource: unknown }> {
  const firsts = (x: unknown) => (Array.isArray(x) ? (x as unknown[][]).map((r) => r[0]) : x);
  const hits = (file: string, sql: string) => WORDS.map((w) => [w, firsts(held(file, sql, w))]);
  const c = `"${column}"`;
  return {
    m: { held: held(tgt, `SELECT id, "${column}" FROM m ORDER BY id`), fromSource: all(src, `SELECT id, ${c} FROM t ORDER BY id`) },
    mc: { held: held(tgt, 'SELECT id, up, b FROM mc ORDER BY id'), fromSource: all(src, `SELECT id, upper(${c}), b FROM t ORDER BY id`) },
    mf: {
      held: held(tgt, 'SELECT id, b FROM mf ORDER BY id'),
      fromSource: all(src, `SELECT id, b FROM t WHERE ${c} LIKE 't%' ORDER BY id`),
    },
    f: {
      held: hits(tgt, 'SELECT rowid FROM f WHERE f MATCH ? ORDER BY rowid'),
      fromSource: hits(src, `SELECT id FROM t WHERE lower(${c}) = ? ORDER BY id`),
    },
  };
}

/** The projections whose rows are not what a build from the source now would give. */
export function stale(src: string, tgt: string, column = 'a'): string[] {
  return Object.entries(contents(src, tgt, column))
    .filter(([, c]) => JSON.stringify(c.held, big) !== JSON.stringify(c.fromSource, big))
    .map(([n]) => n);
}

const big = (_k: string, v: unknown) => (typeof v === 'bigint' ? Number(v) : v);

/**
 * Exact or fail-closed, never green and stale: every projection that is not
 * exact is one health names (exit 3, needsAction, with the command that
 * repairs it), and when health and verify both exit 0 every projection is exact.
 * Returns the projections health says need action, and what it said of each.
 */
export async function expectExactOrFailClosed(
  src: string,
  tgt: string,
  column = 'a',
): Promise<{ flagged: string[]; health: z.infer<typeof S.healthOutput> }> {
  // Both only read: side by side.
  const [h, v] = await Promise.all([runCliAsync(['health', tgt, '--json']), runCliAsync(['verify', src, tgt, '--json'])]);
  expect([0, 3], h.stderr).toContain(h.status);
  const health = parseJson(h, S.healthOutput);
  const flagged = health.projections.filter((p) => p.needsAction).map((p) => p.name);
  for (const p of health.projections.filter((x) => x.needsAction)) expect(p.action ?? p.problems.join('; '), p.name).toMatch(/sluice /);
  const bad = stale(src, tgt, column);
  for (const n of bad) expect(flagged, `${n} is stale but health does not name it: ${h.stdout}`).toContain(n);
  expect(h.status === 0, 'health exits 0 exactly when nothing needs action').toBe(flagged.length === 0);
  if (v.status === 0) expect(bad, `verify exited 0 with stale projections: ${v.stdout}`).toEqual([]);
  else expect(v.status, v.stderr).toBe(3);
  return { flagged, health };
}
