// export refuses to append to a non-empty --out whose cursor file is gone: one file would hold two histories
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { cli } from '../apply/support/target.ts';
import { dumpTables } from '../cli/support/cli.ts';

/*
 * After a restore of the source the resumed export exits 3
 * (HISTORY_DIVERGED) and says to export to a new --out, or to remove the
 * file and its cursor. Removing only FILE.cursor and exporting again to
 * the same --out appended a new snapshot (of the restored history, at a
 * lower seq) after the old history's batches, exit 0: one file holding two
 * histories, which an import into a new target applied as the old one. A
 * segment folder the same. Without a restore too, a second snapshot
 * appended to an export with no word is nothing a user asks for. Now an
 * export with no cursor file (and no --since) refuses a --out that is a
 * non-empty file, or a folder holding segments: EXPORT_CURSOR_MISSING,
 * exit 1, naming the file and the fix, nothing written. An empty file, or
 * an empty folder, is exported into as before.
 */

function ok(args: string[]): void {
  const r = cli(args);
  expect(r.status, r.stderr).toBe(0);
}

function bytesOf(p: string): Record<string, string> {
  const out: Record<string, string> = {};
  const files = fs.statSync(p).isDirectory() ? fs.readdirSync(p).map((f) => path.join(p, f)) : [p];
  for (const f of [...files, `${p}.cursor`]) if (fs.existsSync(f)) out[f] = fs.readFileSync(f).toString('base64');
  return out;
}

describe('sluice export to an --out without its cursor file', () => {
  for (const format of ['jsonl', 'segment'] as const)
    test(`${format}: after a restore and the cursor file removed alone, the export is refused, nothing written; a new --out imports to the source`, ({
      tmp,
    }) => {
      const src = path.join(tmp, 'src.db');
      const old = path.join(tmp, 'old.db');
      const seg = format === 'segment' ? ['--format', 'segment'] : [];
      const out = path.join(tmp, format === 'jsonl' ? 'e.jsonl' : 'e');
      runSqliteCli(src, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b');");
      ok(['enable', src, 't']);
      ok(['export', src, '--out', out, ...seg]);
      runSqliteCli(src, "INSERT INTO t VALUES (3, 'c')");
      fs.copyFileSync(src, old);
      runSqliteCli(src, "INSERT INTO t VALUES (4, 'd'); INSERT INTO t VALUES (5, 'e'); DELETE FROM t WHERE id = 1;");
      ok(['export', src, '--out', out, ...seg]);
      runSqliteCli(src, `.restore ${old}`);
      runSqliteCli(src, "INSERT INTO t VALUES (6, 'NEW')");
      const resumed = cli(['export', src, '--out', out, ...seg]);
      expect(resumed.status, resumed.stderr).toBe(3);
      expect(resumed.stderr).toMatch(/HISTORY_DIVERGED|SEQ_REGRESSED/);

      fs.rmSync(`${out}.cursor`);
      const before = bytesOf(out);
      const again = cli(['export', src, '--out', out, ...seg]);
      expect(again.status, again.stderr).toBe(1);
      expect(again.stderr).toContain('EXPORT_CURSOR_MISSING');
      expect(again.stderr).toContain(out);
      expect(again.stderr).toContain(`${out}.cursor`);
      expect(again.stderr).toMatch(/new --out/);
      expect(bytesOf(out)).toEqual(before);
      expect(fs.existsSync(`${out}.cursor`)).toBe(false);

      // As it says: a new --out (or the old one removed), which imports to the source.
      const fresh = path.join(tmp, format === 'jsonl' ? 'f.jsonl' : 'f');
      ok(['export', src, '--out', fresh, ...seg]);
      const tgt = path.join(tmp, 'tgt.db');
      ok(['import', tgt, fresh]);
      expect(dumpTables(tgt, ['t'])).toEqual(dumpTables(src, ['t']));
      fs.rmSync(out, { recursive: true });
      ok(['export', src, '--out', out, ...seg]);
    });

  test('an empty file, an empty folder, or a folder holding no segment is exported into', ({ tmp }) => {
    const src = path.join(tmp, 'src.db');
    runSqliteCli(src, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');");
    ok(['enable', src, 't']);
    const file = path.join(tmp, 'e.jsonl');
    fs.writeFileSync(file, '');
    ok(['export', src, '--out', file]);
    const folder = path.join(tmp, 'segs');
    fs.mkdirSync(folder);
    fs.writeFileSync(path.join(folder, 'README'), 'segments of src.db\n');
    ok(['export', src, '--out', folder, '--format', 'segment']);
    for (const p of [file, folder]) ok(['import', path.join(tmp, `${path.basename(p)}.db`), p]);
  });

  test('segment: a first run killed after its segment was renamed in, before its cursor was saved, is resumed (START in DIR.cursor)', ({
    tmp,
  }) => {
    // The state such a kill leaves: the snapshot segment, and DIR.cursor saying a snapshot was being written.
    const src = path.join(tmp, 'src.db');
    runSqliteCli(src, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a');");
    ok(['enable', src, 't']);
    const folder = path.join(tmp, 'segs');
    ok(['export', src, '--out', folder, '--format', 'segment']);
    fs.writeFileSync(`${folder}.cursor`, 'START 0\n');
    runSqliteCli(src, "INSERT INTO t VALUES (2, 'b')");
    ok(['export', src, '--out', folder, '--format', 'segment']);
    ok(['import', path.join(tmp, 'tgt.db'), folder]);
    expect(dumpTables(path.join(tmp, 'tgt.db'), ['t'])).toEqual(dumpTables(src, ['t']));
  });
});
