import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, runSqliteCli, runCli } from '../support/fixtures.ts';
import { openDatabase } from '../../src/sqlite/index.ts';

/*
 * A column left out of capture stays out by its name: dropped by one
 * `sluice alter` (or by another program) and added again under its name
 * later, its new values are journaled nowhere (no `_sluice_` row, no
 * `changes` line, no target), as when the drop and the add are one script.
 * `enable --exclude` naming another set is the way to capture it.
 */

const SECRET = 'hunter2';

function cli(args: readonly string[]): string {
  const r = runCli(args);
  if (r.status !== 0) throw new Error(`sluice ${args.join(' ')} failed (${r.status}): ${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** Every cell of sluice's own tables in `file` that holds the secret (as text or bytes). */
function journalHits(file: string): string[] {
  const db = openDatabase(file, { readonly: true });
  try {
    const tables = db
      .prepare("SELECT name FROM sqlite_schema WHERE type = 'table' AND name LIKE '\\_sluice\\_%' ESCAPE '\\'")
      .pluck()
      .all() as string[];
    const hits: string[] = [];
    for (const t of tables)
      for (const row of db.prepare(`SELECT * FROM "${t}"`).all() as Record<string, unknown>[])
        for (const [k, v] of Object.entries(row))
          if ((typeof v === 'string' && v.includes(SECRET)) || (Buffer.isBuffer(v) && v.includes(SECRET))) hits.push(`${t}.${k}`);
    return hits;
  } finally {
    db.close();
  }
}

/** Whether the secret's bytes are in the file or its -wal. */
function inFile(file: string): boolean {
  return [file, `${file}-wal`].some((f) => fs.existsSync(f) && fs.readFileSync(f).includes(SECRET));
}

function excludedOf(src: string): unknown {
  return (JSON.parse(cli(['status', src, '--json'])) as { tables: { name: string; excluded: string[] }[] }).tables.find(
    (t) => t.name === 'users',
  )?.excluded;
}

function setup(tmp: string): { src: string; tgt: string } {
  const src = path.join(tmp, 'src.db');
  const tgt = path.join(tmp, 'tgt.db');
  runSqliteCli(
    src,
    "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT, secret TEXT); INSERT INTO users VALUES (1,'ada','s1'),(2,'bob','s2');",
  );
  cli(['enable', src, 'users', '--exclude', 'secret']);
  cli(['sync', src, tgt]);
  return { src, tgt };
}

function expectNoLeak(src: string, tgt: string): void {
  runSqliteCli(
    src,
    `UPDATE users SET secret = '${SECRET}', name = 'ada2' WHERE id = 1; INSERT INTO users (id, name, secret) VALUES (3, 'cy', '${SECRET}');`,
  );
  cli(['sync', src, tgt]);
  expect(runSqliteCli(tgt, 'SELECT name FROM users ORDER BY id').trim().split('\n')).toEqual(['ada2', 'bob', 'cy']);
  expect(journalHits(src)).toEqual([]);
  expect(cli(['changes', src])).not.toContain(SECRET);
  expect(inFile(tgt)).toBe(false);
  expect(excludedOf(src)).toEqual(['secret']);
}

describe('a column left out of capture, dropped and added again under its name', () => {
  test('by two separate sluice alter runs: still left out', ({ tmp }) => {
    const { src, tgt } = setup(tmp);
    cli(['alter', src, 'ALTER TABLE users DROP COLUMN secret']);
    cli(['alter', src, 'ALTER TABLE users ADD COLUMN secret TEXT']);
    expectNoLeak(src, tgt);
  });

  test('by the sqlite3 CLI, with a sluice sync re-arming between the drop and the add: still left out', ({ tmp }) => {
    const { src, tgt } = setup(tmp);
    runSqliteCli(src, 'ALTER TABLE users DROP COLUMN secret');
    cli(['sync', src, tgt]);
    runSqliteCli(src, 'ALTER TABLE users ADD COLUMN secret TEXT');
    cli(['sync', src, tgt]);
    expectNoLeak(src, tgt);
  });

  test('by sluice alter, then another column added by the sqlite3 CLI: the table re-arms by itself, the name still left out', ({ tmp }) => {
    const { src, tgt } = setup(tmp);
    cli(['alter', src, 'ALTER TABLE users DROP COLUMN secret']);
    runSqliteCli(src, 'ALTER TABLE users ADD COLUMN note TEXT');
    cli(['sync', src, tgt]);
    runSqliteCli(src, "UPDATE users SET note = 'n1' WHERE id = 1");
    cli(['sync', src, tgt]);
    expect(runSqliteCli(tgt, 'SELECT note FROM users WHERE id = 1').trim()).toBe('n1');
    runSqliteCli(src, 'ALTER TABLE users ADD COLUMN secret TEXT');
    cli(['sync', src, tgt]);
    expectNoLeak(src, tgt);
  });

  test('enable --exclude naming another set captures it again, as asked', ({ tmp }) => {
    const { src, tgt } = setup(tmp);
    cli(['alter', src, 'ALTER TABLE users DROP COLUMN secret']);
    expect(excludedOf(src)).toEqual(['secret']);
    cli(['enable', src, 'users', '--exclude', '']);
    expect(excludedOf(src)).toEqual([]);
    cli(['alter', src, 'ALTER TABLE users ADD COLUMN secret TEXT']);
    runSqliteCli(src, "UPDATE users SET secret = 'open' WHERE id = 1");
    cli(['sync', src, tgt]);
    expect(runSqliteCli(tgt, 'SELECT secret FROM users WHERE id = 1').trim()).toBe('open');
  });
});
