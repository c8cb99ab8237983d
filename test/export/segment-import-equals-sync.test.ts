// export --format segment then import gives the same target as sync, applies each batch once, and picks the format by the file's first bytes
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, dumpTables, scalar, syncByLibrary } from '../cli/support/cli.ts';

const TABLES = ['comments', 'issues', 'labels', 'repositories'];

const WRITER = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i in range(10):
    con.execute("INSERT INTO issues (repo_id, number, title, body, state, author, score, updated_at) VALUES (1, ?, ?, NULL, 'open', 'py', ?, '2026-05-01')", (500 + i, 'from python %d' % i, i / 3))
    con.commit()
for n in range(1, 11):
    con.execute("UPDATE issues SET title = title || ' (edited)', score = NULL WHERE repo_id = 2 AND number = ?", (n,))
    con.commit()
con.execute("UPDATE comments SET id = id + 5000 WHERE id <= 3")
con.commit()
con.execute("DELETE FROM comments WHERE id BETWEEN 20 AND 25")
con.commit()
con.execute("UPDATE labels SET color = x'' WHERE repo_id = 1")
con.execute("INSERT INTO repositories (id, owner, name, description, stars, created_at) VALUES (77, 'py', 'NEW', CAST(x'ff41' AS TEXT), 9223372036854775807, '2026-05-02')")
con.commit()
`;

let dir: string;
let src: string;
let segs: string;
let syncedDump: Record<string, string[]>;
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'));
  segs = at('segments');
  const first = await runCliAsync(['export', src, '--out', segs, '--format', 'segment', '--json']);
  expect(first.status, first.stderr).toBe(0);
  runPython(WRITER, [src]);
  const second = await runCliAsync(['export', src, '--out', segs, '--format', 'segment', '--batch', '7', '--json']);
  expect(second.status, second.stderr).toBe(0);
  expect(parseJson(second, S.exportOutput)).toMatchObject({ rows: 0, events: 33, batches: 5 });
  expect(await syncByLibrary(src, at('synced.db'))).toBe(0);
  syncedDump = dumpTables(at('synced.db'));
});
afterAll(() => removeDir(dir));

describe('export --format segment -> import', () => {
  test('writes one segment per run, each a SQLite file named by its seq range; a run with nothing new writes none', async () => {
    const files = fs.readdirSync(segs).sort();
    expect(files).toHaveLength(2);
    for (const f of files) expect(fs.readFileSync(path.join(segs, f)).subarray(0, 16).toString('latin1')).toBe('SQLite format 3\0');
    const again = await runCliAsync(['export', src, '--out', segs, '--format', 'segment', '--json']);
    expect(again.status, again.stderr).toBe(0);
    expect(parseJson(again, S.exportOutput)).toMatchObject({ rows: 0, events: 0, batches: 0 });
    expect(fs.readdirSync(segs)).toHaveLength(2);
  });

  test('the folder imports to the synced target (and the source), with every batch applied once', async () => {
    const imported = at('imported.db');
    const r = await runCliAsync(['import', imported, segs, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const rep = parseJson(r, S.importOutput);
    expect(rep).toMatchObject({ batchesApplied: 5, batchesSkipped: 0, incompleteTail: 0 });
    const seq = Number(scalar(src, 'SELECT max(seq) FROM main._sluice_journal'));
    expect(rep.projections.map((p) => [p.name, p.state, p.seq]).sort()).toEqual(TABLES.map((t) => [t, 'active', seq]));
    expect(dumpTables(imported)).toEqual(syncedDump);
    expect(dumpTables(src, TABLES)).toEqual(syncedDump);
    const again = await runCliAsync(['import', imported, segs, '--json']);
    expect(again.status, again.stderr).toBe(0);
    expect(parseJson(again, S.importOutput)).toMatchObject({ batchesApplied: 0, batchesSkipped: 5 });
    expect(dumpTables(imported)).toEqual(syncedDump);
  });

  test('one segment at a time, named as a file, is detected by its first bytes', async () => {
    const target = at('one-by-one.db');
    for (const f of fs.readdirSync(segs).sort()) {
      const r = await runCliAsync(['import', target, path.join(segs, f), '--json']);
      expect(r.status, r.stderr).toBe(0);
    }
    expect(dumpTables(target)).toEqual(syncedDump);
  });

  test('a protected target imports segments: its guards still run the function sluice registers after the segment is attached', async () => {
    const target = at('protected.db');
    const [snap, events] = fs.readdirSync(segs).sort() as [string, string];
    const r1 = await runCliAsync(['import', target, path.join(segs, snap)]);
    expect(r1.status, r1.stderr).toBe(0);
    const p = await runCliAsync(['protect', target]);
    expect(p.status, p.stderr).toBe(0);
    const r2 = await runCliAsync(['import', target, path.join(segs, events)]);
    expect(r2.status, r2.stderr).toBe(0);
    expect(dumpTables(target)).toEqual(syncedDump);
  });

  test('--format is checked', async () => {
    const r = await runCliAsync(['export', src, '--out', at('x'), '--format', 'xml']);
    expect(r.status).not.toBe(0);
    expect(r.stderr).toMatch(/BAD_FORMAT/);
  });
});
