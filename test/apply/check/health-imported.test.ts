// health of an imported target says its lag is not tracked and exits 0 unless something else needs action
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { importFile } from '../../../src/export/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, write, exportByLibrary } from '../../cli/support/cli.ts';

/*
 * A target filled by `sluice import FILE` has no source to read a lag from,
 * and none is kept up to date by a stream: the target records that each
 * projection is imported, from which file and when, and health reports its
 * lag as not tracked (lagEvents null, a note saying so), exit 0 unless the
 * projection has another problem. An imported target made before the
 * record cannot be told from a subscribed one: its lag stays unknown (exit
 * 3) until the next import records it.
 */

let dir: string;
let src: string;
let tgt: string;
let file: string;
const at = (f: string) => path.join(dir, f);

beforeEach(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues', 'labels']);
  tgt = at('cache.db');
  file = at('changes.jsonl');
  exportByLibrary(src, file);
});
afterEach(() => removeDir(dir));

async function health(...flags: string[]) {
  const r = await runCliAsync(['health', tgt, '--json', ...flags]);
  return { status: r.status, h: parseJson(r, S.healthOutput) };
}

describe('health of an imported target', () => {
  test('reports lagEvents null with a note that the lag of an import is not tracked, naming the file, and exits 0', async () => {
    const imported = await runCliAsync(['import', tgt, file]);
    expect(imported.status, imported.stderr).toBe(0);
    const { status, h } = await health();
    expect(status, JSON.stringify(h)).toBe(0);
    expect(h.projections.map((p) => p.name).sort()).toEqual(['issues', 'labels']);
    for (const p of h.projections) {
      expect(p).toMatchObject({ lagEvents: null, lagMs: null, needsAction: false, problems: [] });
      expect(p.fedBy).toMatchObject({ via: 'import', file });
      expect(p.note).toContain('the lag of an import is not tracked');
    }
    const text = await runCliAsync(['health', tgt]);
    expect(text.status).toBe(0);
    expect(text.stdout).toContain(`the lag of an import is not tracked (last imported from ${file}`);
  });

  test('still exits 3 for another problem of an imported projection', async () => {
    await importFile(tgt, file);
    write(tgt, 'DROP TABLE labels');
    const { status, h } = await health();
    expect(status).toBe(3);
    expect(h.projections.find((p) => p.name === 'labels')).toMatchObject({ needsAction: true });
    expect(h.projections.find((p) => p.name === 'issues')).toMatchObject({ needsAction: false });
  });

  test('made before the record: its lag cannot be known (exit 3, naming import and subscribe); importing a file again records it, exit 0', async () => {
    await importFile(tgt, file);
    const db = openDatabase(tgt);
    db.exec('ALTER TABLE _sluice_projections DROP COLUMN fed_by');
    db.close();
    const before = await health();
    expect(before.status).toBe(3);
    const said = before.h.projections[0]?.problems.join('\n') ?? '';
    expect(said).toContain('--nats');
    expect(said).toContain(`sluice import ${tgt} FILE`);

    const again = await runCliAsync(['import', tgt, file]);
    expect(again.status, again.stderr).toBe(0);
    const after = await health();
    expect(after.status, JSON.stringify(after.h)).toBe(0);
    expect(after.h.projections[0]?.fedBy).toMatchObject({ via: 'import', file });
  });
});
