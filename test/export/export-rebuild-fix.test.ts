// export that cannot go on from its cursor (a table re-armed, a bump) says how an export starts again: it has no rebuild of its own
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { cli } from '../apply/support/target.ts';

/*
 * After the source's table is re-armed (enable --exclude changed, a re-arm
 * a sync makes) or bumped, an export resumed from its FILE.cursor exits 3
 * with TABLE_REARMED / GENERATION_CHANGED, on every run, as it must: the
 * file's history no longer continues. Its message ended "Rebuild it from a
 * snapshot", which export has no way to do, and said nothing of FILE.cursor
 * or --out. Now it says what does: export to a new file (it starts with a
 * snapshot), or remove the file and its cursor first; importing the new
 * file rebuilds the target. Doing as it says works.
 */

describe('sluice export', () => {
  for (const format of ['jsonl', 'segment'] as const)
    test(`resumed (${format}) after a re-arm: exit 3 naming the cursor file and a new --out; exporting anew as told then imports into the old target, which rebuilds`, ({
      tmp,
    }) => {
      const src = path.join(tmp, 'src.db');
      runSqliteCli(src, "CREATE TABLE f (id INTEGER PRIMARY KEY, a TEXT, b TEXT); INSERT INTO f VALUES (1, 'a1', 'b1');");
      expect(cli(['enable', src, 'f']).status).toBe(0);
      const seg = format === 'segment' ? ['--format', 'segment'] : [];
      const out = path.join(tmp, format === 'jsonl' ? 'x.jsonl' : 'segs');
      expect(cli(['export', src, '--out', out, ...seg]).status).toBe(0);
      const tgt = path.join(tmp, 'imported.db');
      expect(cli(['import', tgt, out]).status).toBe(0);

      expect(cli(['enable', src, 'f', '--exclude', 'b']).status).toBe(0);
      runSqliteCli(src, "UPDATE f SET a = 'a2';");
      const again = cli(['export', src, '--out', out, ...seg]);
      expect(again.status).toBe(3);
      expect(again.stderr).toContain('TABLE_REARMED');
      expect(again.stderr).toContain(`${out}.cursor`);
      expect(again.stderr).toMatch(/new (file|folder)|new --out/);
      expect(again.stderr).not.toMatch(/Rebuild (it )?from a snapshot\.\s*$/);

      // As it says: a new export, which the old target imports (rebuilding from its snapshot).
      const fresh = path.join(tmp, format === 'jsonl' ? 'y.jsonl' : 'segs2');
      expect(cli(['export', src, '--out', fresh, ...seg]).status).toBe(0);
      const imported = cli(['import', tgt, fresh]);
      expect(imported.status, imported.stderr).toBe(0);
      expect(cli(['verify', src, tgt]).status).toBe(0);
      // Or: the old one removed with its cursor, then exported again.
      fs.rmSync(out, { recursive: true, force: true });
      fs.rmSync(`${out}.cursor`, { force: true });
      expect(cli(['export', src, '--out', out, ...seg]).status).toBe(0);
    });

  test('resumed from --since after a bump: exit 3, told to export without --since', ({ tmp }) => {
    const src = path.join(tmp, 'src.db');
    runSqliteCli(src, "CREATE TABLE f (id INTEGER PRIMARY KEY, a TEXT); INSERT INTO f VALUES (1, 'a1');");
    expect(cli(['enable', src, 'f']).status).toBe(0);
    const first = cli(['export', src, '--out', path.join(tmp, 'x.jsonl'), '--json']);
    const cursor = (JSON.parse(first.stdout) as { cursor: { cursor: string } | string }).cursor;
    const since = typeof cursor === 'string' ? cursor : cursor.cursor;
    expect(cli(['bump', src, '--reason', 'bulk load']).status).toBe(0);
    const r = cli(['export', src, '--out', path.join(tmp, 'y.jsonl'), '--since', since]);
    expect(r.status).toBe(3);
    expect(r.stderr).toContain('GENERATION_CHANGED');
    expect(r.stderr).toContain('without --since');
  });
});
