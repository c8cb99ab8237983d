import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { runSqliteCli, runCli } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';

/*
 * A source whose table `users` (id, name, secret) is captured with `secret`
 * left out, synced once into a target, all through the CLI; and the checks
 * that no value of a secret reached sluice's tables, `changes` or the target.
 */

export const SECRET = 'hunter2';

/** sluice ARGS, which must exit 0: its stdout. */
export function cli(args: readonly string[]): string {
  const r = runCli(args);
  if (r.status !== 0) throw new Error(`sluice ${args.join(' ')} failed (${r.status}): ${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** Every cell of sluice's own tables in `file` that holds `secret` (as text or bytes). */
export function journalHits(file: string, secret: string = SECRET): string[] {
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
          if ((typeof v === 'string' && v.includes(secret)) || (Buffer.isBuffer(v) && v.includes(secret))) hits.push(`${t}.${k}`);
    return hits;
  } finally {
    db.close();
  }
}

/** Whether `secret`'s bytes are in the file or its -wal. */
export function inFile(file: string, secret: string = SECRET): boolean {
  return [file, `${file}-wal`].some((f) => fs.existsSync(f) && fs.readFileSync(f).includes(secret));
}

/** The columns `users` of `src` leaves out, as status --json says. */
export function excludedOf(src: string): unknown {
  return (JSON.parse(cli(['status', src, '--json'])) as { tables: { name: string; excluded: string[] }[] }).tables.find(
    (t) => t.name === 'users',
  )?.excluded;
}

/** src.db with users (id, name, secret) captured leaving secret out, synced once into tgt.db. */
export function setup(tmp: string): { src: string; tgt: string } {
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

/** No cell of sluice's tables, no `changes` line (nor its refusal, while a table is unarmed) and no byte of the target holds `secret`. */
export function expectNowhere(src: string, tgt: string, secret: string = SECRET): void {
  expect(journalHits(src, secret)).toEqual([]);
  const changes = runCli(['changes', src]);
  expect(changes.stdout + changes.stderr).not.toContain(secret);
  expect(inFile(tgt, secret)).toBe(false);
}
