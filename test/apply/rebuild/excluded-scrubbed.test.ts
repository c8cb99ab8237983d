// a column left out of capture after a target was built leaves no byte of its values in the target's files once rebuilt or dropped
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { enable } from '../../../src/capture/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { dropProjection } from '../../../src/apply/projections/index.ts';
import { makeSource } from '../support/target.ts';
import { runCliAsync, startCli, waitFor, type Spawned } from '../../cli/support/cli.ts';
import { afterEach } from 'vitest';

let follower: Spawned | undefined;
afterEach(() => {
  follower?.child.kill('SIGKILL');
  follower = undefined;
});

/*
 * docs/journal.md, "Columns left out of capture": an excluded column ends
 * up in no target. A target built before the column was excluded holds
 * its values; the rebuild that takes the column out (a mirror's changed
 * definition, a map's reinit without it) and `sluice drop` of a projection
 * that read it free those tables' pages. They are freed zeroed
 * (secure_delete, for that drop only) and the target checkpointed after
 * (TRUNCATE), so neither the file nor its -wal keeps the values. Whatever
 * feeds the target: a sync, or an import of the export (JSONL or segments)
 * taken after the exclusion, whose table shape names no excluded column
 * (the rebuild loses a column the stored shape had: that is the rule).
 */

const ROWS = 2000;
const SCHEMA = 'CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT NOT NULL, pw TEXT)';
const SEED = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO users SELECT i, 'n' || i, printf('SECRETPW%06d', i) FROM c`;

/** How many distinct excluded values (either case: an fts5 index lowers its tokens) the target's file and -wal hold. */
function secretsIn(file: string): number {
  const bytes = Buffer.concat([file, `${file}-wal`].filter((f) => fs.existsSync(f)).map((f) => fs.readFileSync(f)));
  return new Set(
    bytes
      .toString('latin1')
      .match(/SECRETPW[0-9]{6}/gi)
      ?.map((s) => s.toUpperCase()) ?? [],
  ).size;
}

/** The columns of the target's users table, read by a connection of its own. */
function columnsOf(target: string): unknown {
  const t = openDatabase(target, { readonly: true });
  try {
    return t.prepare("SELECT group_concat(name) FROM pragma_table_info('users')").pluck().get();
  } finally {
    t.close();
  }
}

/** `sluice sync SRC TGT --follow`, once it says it follows (killed after the test). */
async function startFollower(src: string, target: string): Promise<Spawned> {
  const f = startCli(['sync', src, target, '--follow']);
  follower = f;
  await waitFor('the follower started', () => `${f.stdout()}${f.stderr()}`.includes('following'));
  return f;
}

describe('a column excluded after a target was built', () => {
  test('a mirror rebuilt without it (a protected rebuild: swap, retired table dropped) keeps none of its values', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['users'], { seed: SEED });
    const target = path.join(tmp, 'cache.db');
    await sync(src.file, target);
    expect(secretsIn(target)).toBe(ROWS);
    // A user index over the column: its pages go zeroed too.
    const t = openDatabase(target);
    t.exec('CREATE INDEX by_pw ON users (pw)');
    t.close();
    enable(src.db, ['users'], { exclude: ['pw'] });
    const r = await sync(src.file, target);
    expect(r.projections[0]).toMatchObject({ rebuilt: 'DEFINITION_CHANGED', swapped: true });
    const check = openDatabase(target, { readonly: true });
    expect(check.prepare("SELECT group_concat(name) FROM pragma_table_info('users')").pluck().get()).toBe('id,name');
    check.close();
    expect(secretsIn(target)).toBe(0);
  });

  test('a map and an fts5 index that read it: a reinit without it, and a drop, keep none of its values', async ({ makeDb, tmp }) => {
    const src = makeSource(makeDb, SCHEMA, ['users'], { seed: SEED });
    const target = path.join(tmp, 'cache.db');
    const map = (withPw: boolean) => ({
      name: 'umap',
      source: 'users',
      kind: 'map' as const,
      columns: { id: 'id', name: 'name', ...(withPw ? { pwc: 'pw' } : {}) },
    });
    const fts = { name: 'ufts', source: 'users', kind: 'fts5' as const, columns: ['name', 'pw'], content: 'external' as const };
    await sync(src.file, target, { projections: [map(true), fts] });
    expect(secretsIn(target)).toBe(ROWS);
    enable(src.db, ['users'], { exclude: ['pw'] });
    // Both now read an excluded column: suspended, their tables as they were.
    await sync(src.file, target);
    await sync(src.file, target, { projections: [map(false)], reinit: ['umap'] });
    dropProjection(target, 'ufts');
    expect(secretsIn(target)).toBe(0);
  });

  test('a mirror fed by import (a JSONL file, segment files) rebuilt from the export taken after the exclusion keeps none of its values', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeDb('source.db', SCHEMA);
    src.db.exec(SEED);
    src.db.close();
    const at = (f: string) => path.join(tmp, f);
    const cli = async (...args: string[]) => {
      const r = await runCliAsync(args);
      expect(r.status, `sluice ${args.join(' ')}: ${r.stderr}`).toBe(0);
    };
    const segments = (dir: string) =>
      fs
        .readdirSync(dir)
        .filter((f) => f.endsWith('.segment'))
        .map((f) => path.join(dir, f));
    /** Exports the source as it is now, as JSONL (`n`.jsonl) and as segments (seg`n`/), and imports each into its own target. */
    const feed = async (n: number) => {
      await cli('sync', src.file, at('synced.db'));
      await cli('export', src.file, '--out', at(`${n}.jsonl`));
      await cli('import', at('jsonl.db'), at(`${n}.jsonl`));
      fs.mkdirSync(at(`seg${n}`));
      await cli('export', src.file, '--format', 'segment', '--out', at(`seg${n}`));
      await cli('import', at('seg.db'), ...segments(at(`seg${n}`)));
    };
    await cli('enable', src.file, 'users');
    await feed(1);
    for (const t of ['synced.db', 'jsonl.db', 'seg.db']) expect(secretsIn(at(t)), t).toBe(ROWS);
    await cli('enable', src.file, 'users', '--exclude', 'pw');
    await feed(2);
    const left: Record<string, number> = {};
    for (const t of ['synced.db', 'jsonl.db', 'seg.db']) {
      const check = openDatabase(at(t), { readonly: true });
      expect(check.prepare("SELECT group_concat(name) FROM pragma_table_info('users')").pluck().get(), t).toBe('id,name');
      expect(check.prepare('SELECT count(*) FROM users').pluck().get(), t).toBe(BigInt(ROWS));
      check.close();
      left[t] = secretsIn(at(t));
    }
    expect(left).toEqual({ 'synced.db': 0, 'jsonl.db': 0, 'seg.db': 0 });
  });

  test('a mirror a running follower rebuilds without it keeps none of its values in the target file or its -wal while the follower runs', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['users'], { seed: SEED });
    const target = path.join(tmp, 'cache.db');
    await sync(src.file, target);
    const f = await startFollower(src.file, target);
    // Its own commits write the values into the target's log too.
    src.db.exec("UPDATE users SET pw = pw || 'X' WHERE id <= 500");
    await waitFor('the update applied', () => {
      const t = openDatabase(target, { readonly: true });
      try {
        return Number(t.prepare("SELECT count(*) FROM users WHERE pw LIKE '%X'").pluck().get()) === 500;
      } finally {
        t.close();
      }
    });
    enable(src.db, ['users'], { exclude: ['pw'] });
    await waitFor('the follower rebuilt the mirror without pw', () => columnsOf(target) === 'id,name');
    // While it goes on running (a quiet source: no commit of its own moves the log on), nothing of them is left.
    await waitFor('no value left in cache.db or its -wal', () => secretsIn(target) === 0, 5000);
    expect(f.child.exitCode).toBeNull();
  });

  test("another program reading the target through a follower's rebuild without it: once it lets go, no value is left while the source stays quiet", async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['users'], { seed: SEED });
    const target = path.join(tmp, 'cache.db');
    await sync(src.file, target);
    const f = await startFollower(src.file, target);
    // A reader of the target in a read transaction: the scrubbed drop's checkpoint cannot empty the log under it.
    const reader = openDatabase(target, { readonly: true });
    reader.exec('BEGIN');
    expect(reader.prepare('SELECT count(*) FROM users').pluck().get()).toBe(BigInt(ROWS));
    enable(src.db, ['users'], { exclude: ['pw'] });
    await waitFor('the follower rebuilt the mirror without pw', () => columnsOf(target) === 'id,name');
    // Past the passes the rebuild brings (its own DDL): the source stays quiet from here on.
    await new Promise((r) => setTimeout(r, 2000));
    expect(secretsIn(target), 'the values are still in the log the reader holds').toBeGreaterThan(0);
    reader.exec('COMMIT');
    reader.close();
    // The follower finishes the checkpoint it owes by itself (before: only at the source's next commit, or its stop).
    await waitFor('no value left in cache.db or its -wal', () => secretsIn(target) === 0, 5000);
    expect(f.child.exitCode).toBeNull();
  });
});
