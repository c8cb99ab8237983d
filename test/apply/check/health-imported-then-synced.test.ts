// a target imported and then synced from its source is health checked against that source
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe, runPython } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { importFile } from '../../../src/export/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, exportByLibrary } from '../../cli/support/cli.ts';

/*
 * A target first filled by `sluice import` and then kept by `sluice sync`
 * from the source it was exported from (the usual way to seed a cache from
 * a file and go live) is fed by that sync from then on: health reads its
 * lag from the source, as for any synced target. Before, the row kept
 * saying "imported" and had no source path, so health said the lag was not
 * tracked and exited 0 however far behind the source the target fell, even
 * with --max-lag-events.
 */

let dir: string;
let src: string;
let tgt: string;
let file: string;
const at = (f: string) => path.join(dir, f);

beforeEach(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['repositories']);
  tgt = at('cache.db');
  file = at('changes.jsonl');
  // The export and the import through the library (what the CLI runs); the tests run the CLI's sync and health.
  exportByLibrary(src, file);
  const imported = await importFile(tgt, file);
  expect(imported.projections.map((p) => p.state)).toEqual(['active']);
});
afterEach(() => removeDir(dir));

/** 20 commits by another program to the source, none of them synced. */
function fallBehind(): void {
  runPython(
    `import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for i in range(20):
    c.execute("UPDATE repositories SET stars = stars + 1 WHERE id = (SELECT min(id) FROM repositories)")
    c.commit()`,
    [src],
  );
}

describe('a target imported and then synced from its source', () => {
  test('a sync that applied nothing: health then reads the lag from that source and exits 3 past --max-lag-events', async () => {
    const synced = await runCliAsync(['sync', src, tgt]);
    expect(synced.status, synced.stderr).toBe(0);
    fallBehind();
    const r = await runCliAsync(['health', tgt, '--json', '--max-lag-events', '5']);
    const h = parseJson(r, S.healthOutput);
    expect(h.projections[0], JSON.stringify(h)).toMatchObject({ name: 'repositories', lagEvents: 20, needsAction: true });
    expect(h.projections[0]?.fedBy).toEqual({ via: 'sync', source: src });
    expect(r.status).toBe(3);
  });

  test('a sync that applied events: the same', async () => {
    fallBehind();
    const synced = await runCliAsync(['sync', src, tgt]);
    expect(synced.status, synced.stderr).toBe(0);
    fallBehind();
    const r = await runCliAsync(['health', tgt, '--json', '--max-lag-events', '5']);
    const h = parseJson(r, S.healthOutput);
    expect(h.projections[0], JSON.stringify(h)).toMatchObject({ name: 'repositories', lagEvents: 20, needsAction: true });
    expect(r.status).toBe(3);
  });
});
