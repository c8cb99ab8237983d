// import of a folder that holds no segment is refused, naming the folder, what it expected and the fix, before a target is made
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { runCliAsync, makeDir, removeDir, write, expectOneLineError } from '../cli/support/cli.ts';

/*
 * import reads a folder as the segments `export --format segment` writes
 * there (its first run always writes one, a snapshot). A folder with no
 * *.segment file in it (the folder a JSONL export was written into, the
 * wrong folder) was imported as nothing: exit 0, "read 0 lines", and an
 * empty target made. It is refused now, IMPORT_NOT_FOUND, exit 1, and no
 * target is made; the JSONL file in it is named as the one to import. A
 * segment export's own folder (DIR.cursor beside it), emptied once its
 * segments were imported, still imports nothing, as a run of the export
 * with nothing new writes nothing there.
 */

let dir: string;
let src: string;
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  dir = makeDir();
  src = at('app.db');
  openDatabase(src, { create: true }).close();
  write(src, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b');");
  const en = await runCliAsync(['enable', src, 't']);
  expect(en.status, en.stderr).toBe(0);
  fs.mkdirSync(at('exports'));
  const r = await runCliAsync(['export', src, '--out', at('exports/changes.jsonl')]);
  expect(r.status, r.stderr).toBe(0);
  fs.mkdirSync(at('empty'));
});
afterAll(() => removeDir(dir));

describe('import of a folder with no segment in it', () => {
  test('a folder of JSONL exports: refused with IMPORT_NOT_FOUND naming the folder and the JSONL file to import, no target made', async () => {
    const tgt = at('cache.db');
    const r = await runCliAsync(['import', tgt, at('exports')]);
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'IMPORT_NOT_FOUND');
    expect(r.stderr).toContain(`${at('exports')} holds no segment (*.segment)`);
    expect(r.stderr).toContain('export --format segment');
    expect(r.stderr).toContain(`sluice import ${tgt} ${path.join(at('exports'), 'changes.jsonl')}`);
    expect(fs.existsSync(tgt)).toBe(false);
  });

  test('an empty folder: refused the same way, no target made', async () => {
    const tgt = at('cache2.db');
    const r = await runCliAsync(['import', tgt, at('empty')]);
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'IMPORT_NOT_FOUND');
    expect(r.stderr).toContain(`${at('empty')} holds no segment (*.segment)`);
    expect(fs.existsSync(tgt)).toBe(false);
  });

  test('the folder of a segment export still imports; emptied once imported, with its cursor beside it, it imports nothing and exits 0', async () => {
    const segs = at('segs');
    const e = await runCliAsync(['export', src, '--out', segs, '--format', 'segment']);
    expect(e.status, e.stderr).toBe(0);
    const r = await runCliAsync(['import', at('from-segs.db'), segs, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ lines: 4 });
    // Its segments removed once imported, and a later run with nothing new writes none (docs/segment.md).
    for (const f of fs.readdirSync(segs)) fs.rmSync(path.join(segs, f));
    const again = await runCliAsync(['export', src, '--out', segs, '--format', 'segment']);
    expect(again.status, again.stderr).toBe(0);
    expect(fs.readdirSync(segs)).toEqual([]);
    const none = await runCliAsync(['import', at('from-segs.db'), segs]);
    expect(none.status, none.stderr).toBe(0);
    expect(none.stdout).toContain('read 0 lines');
  });
});
