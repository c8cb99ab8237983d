// health exits 0 for a cursor the next sync rebuilds by itself and 3 for one it cannot
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { enable } from '../../../src/capture/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, write, syncByLibrary } from '../../cli/support/cli.ts';
import { pythonWrite } from '../../cli/support/source-state.ts';

/*
 * A cursor the next sync rebuilds by itself (a `rebuilt` code of the
 * catalog: DDL sluice did not make before a custom projection, a bumped
 * generation, ...) needs no action: health says so in `rebuild` and exits 0.
 * One the next sync cannot rebuild by itself (the source must be fixed
 * first) still needs action: exit 3.
 */

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) removeDir(d);
  dirs = [];
});

/** A source capturing items, with a mirror and a custom projection of it synced into a target. */
async function setup() {
  const dir = makeDir();
  dirs.push(dir);
  const at = (f: string) => path.join(dir, f);
  const src = at('app.db');
  const tgt = at('cache.db');
  pythonWrite(src, "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO items VALUES (1, 'a'), (2, 'b')");
  fs.writeFileSync(at('seen.mjs'), "export default { version: '1', apply() {} };\n");
  fs.writeFileSync(at('seen.json'), JSON.stringify({ name: 'seen', source: 'items', kind: 'custom', module: './seen.mjs' }));
  fs.writeFileSync(at('items.json'), JSON.stringify({ name: 'items', source: 'items', kind: 'mirror' }));
  // Capture and the first sync through the library (what the CLI runs): the tests run the CLI's health and sync.
  const db = openDatabase(src);
  try {
    enable(db, ['items']);
  } finally {
    db.close();
  }
  expect(await syncByLibrary(src, tgt, [at('items.json'), at('seen.json')])).toBe(0);
  return { src, tgt };
}

async function health(tgt: string) {
  const [json, text] = await Promise.all([runCliAsync(['health', tgt, '--json']), runCliAsync(['health', tgt])]);
  const h = parseJson(json, S.healthOutput);
  return { status: json.status, text, byName: Object.fromEntries(h.projections.map((p) => [p.name, p])) };
}

describe('health and a cursor that cannot continue', () => {
  test('DDL sluice did not make, before a custom projection: SCHEMA_WINDOW, which the next sync rebuilds by itself, is no action (exit 0)', async () => {
    const { src, tgt } = await setup();
    write(src, 'CREATE INDEX items_name ON items (name)');
    const h = await health(tgt);
    expect(h.byName.seen).toMatchObject({ rebuild: 'SCHEMA_WINDOW', needsAction: false, problems: [] });
    expect(h.byName.items).toMatchObject({ rebuild: null, needsAction: false });
    expect(h.status, JSON.stringify(h.byName)).toBe(0);
    expect(h.text.status).toBe(0);
    expect(h.text.stdout).toMatch(/ok seen \[custom\].*\n.*the next sluice sync rebuilds it by itself \(SCHEMA_WINDOW\)/);

    const s = await runCliAsync(['sync', src, tgt, '--json']);
    expect(s.status, s.stderr).toBe(0);
    expect(parseJson(s, S.syncOutput).projections.find((p) => p.name === 'seen')).toMatchObject({ rebuilt: 'SCHEMA_WINDOW' });
    expect((await health(tgt)).byName.seen).toMatchObject({ rebuild: null, needsAction: false });
  });

  test('a bumped generation: GENERATION_CHANGED for every projection, no action (exit 0)', async () => {
    const { src, tgt } = await setup();
    expect((await runCliAsync(['bump', src, '--reason', 'bulk load with triggers off'])).status).toBe(0);
    const h = await health(tgt);
    expect(h.status, JSON.stringify(h.byName)).toBe(0);
    for (const name of ['items', 'seen']) expect(h.byName[name]).toMatchObject({ rebuild: 'GENERATION_CHANGED', needsAction: false });
  });

  test('a table the next sync cannot re-arm (a UNIQUE expression index): TABLE_UNARMED still needs action (exit 3)', async () => {
    const { src, tgt } = await setup();
    write(src, 'CREATE UNIQUE INDEX items_lower ON items (lower(name))');
    const h = await health(tgt);
    expect(h.status).toBe(3);
    expect(h.byName.items).toMatchObject({ rebuild: 'TABLE_UNARMED', needsAction: true });
    expect(h.byName.items?.action).toMatch(/^TABLE_UNARMED: .*UNIQUE_EXPRESSION_INDEX/);
    expect(h.byName.items?.action).toMatch(/the next sluice sync cannot rebuild items by itself/);
  });

  test('a capture trigger another program dropped: TABLE_UNARMED needs action (exit 3), and the fix it names is the next sync, which re-arms the table and rebuilds', async () => {
    const { src, tgt } = await setup();
    pythonWrite(src, "DROP TRIGGER _sluice_t1_upd; UPDATE items SET name = 'x' WHERE id = 1");
    const h = await health(tgt);
    expect(h.status).toBe(3);
    expect(h.byName.items).toMatchObject({ rebuild: 'TABLE_UNARMED', needsAction: true });
    expect(h.byName.items?.action).toMatch(/^TABLE_UNARMED: .*TRIGGER_MISSING/);
    expect(h.byName.items?.action).toContain(
      `the next sluice sync re-arms items on the source and rebuilds items by itself: sluice sync ${src} ${tgt}`,
    );
    expect(h.text.stdout).not.toMatch(/cannot rebuild/);

    const s = await runCliAsync(['sync', src, tgt, '--json']);
    expect(s.status, s.stderr).toBe(0);
    expect(parseJson(s, S.syncOutput).projections.find((p) => p.name === 'items')).toMatchObject({ rebuilt: 'CAPTURE_REARMED' });
    const after = await health(tgt);
    expect(after.status, JSON.stringify(after.byName)).toBe(0);
  });
  test('a source restored from an older copy: SEQ_REGRESSED needs action (exit 3), the target holding changes the source has not, until a sync rebuilds it', async () => {
    const { src, tgt } = await setup();
    const bak = `${src}.bak`;
    fs.copyFileSync(src, bak);
    pythonWrite(src, "INSERT INTO items VALUES (3, 'c')");
    expect((await runCliAsync(['sync', src, tgt])).status).toBe(0);
    fs.copyFileSync(bak, src);
    const h = await health(tgt);
    expect(h.status, JSON.stringify(h.byName)).toBe(3);
    expect(h.byName.items).toMatchObject({ rebuild: 'SEQ_REGRESSED', needsAction: true });
    expect(h.byName.items?.action).toMatch(/^SEQ_REGRESSED: .*holds changes the source does not have/);
    expect(h.byName.items?.action).toContain(`sluice sync ${src} ${tgt}`);
    expect(h.text.stdout).toMatch(/!! items \[mirror\]/);

    const s = await runCliAsync(['sync', src, tgt, '--json']);
    expect(s.status, s.stderr).toBe(0);
    expect(parseJson(s, S.syncOutput).projections.find((p) => p.name === 'items')).toMatchObject({ rebuilt: 'SEQ_REGRESSED' });
    expect((await health(tgt)).status).toBe(0);
  });

  // The mode is in the cursor's schema digest (SCHEMA_CHANGED, a `rebuilt` code), but a mirror needs row images:
  // the next sync suspends it (NEEDS_IMAGES_MODE) rather than rebuild it, so health says that, with its repair.
  for (const [how, switchMode] of [
    ['switched to keys mode', ['enable', 'keys']],
    ['switched to counter mode', ['enable', 'counter']],
    ['disabled, then enabled again in keys mode', ['disable', 'keys']],
  ] as const) {
    test(`a table ${how}, then written: the next sync suspends its mirror (NEEDS_IMAGES_MODE), so health needs action (exit 3) with that repair, as sync does`, async () => {
      const { src, tgt } = await setup();
      if (switchMode[0] === 'disable') expect((await runCliAsync(['disable', src, 'items'])).status).toBe(0);
      const enabled = await runCliAsync(['enable', src, 'items', '--mode', switchMode[1]]);
      expect(enabled.status, enabled.stderr).toBe(0);
      pythonWrite(src, "UPDATE items SET name = 'x' WHERE id = 1; DELETE FROM items WHERE id = 2");

      const h = await health(tgt);
      expect(h.byName.items).toMatchObject({ state: 'active', rebuild: 'NEEDS_IMAGES_MODE', needsAction: true });
      expect(h.byName.items?.action).toMatch(/^NEEDS_IMAGES_MODE: the next sluice sync suspends items/);
      expect(h.byName.items?.action).toContain(`sluice enable ${src} items --mode images`);
      expect(h.status, JSON.stringify(h.byName)).toBe(3);
      expect(h.text.status).toBe(3);
      expect(h.text.stdout).toMatch(/!! items \[mirror\]/);
      const block = /^!! items \[mirror\].*(?:\n {3}.*)*/m.exec(h.text.stdout)?.[0];
      expect(block, h.text.stdout).toMatch(/-> NEEDS_IMAGES_MODE: /);
      expect(block).not.toMatch(/rebuilds it by itself/);

      // What health said is what sync does: items suspended with that code, seen (a custom projection, no images needed) rebuilt.
      const s = await runCliAsync(['sync', src, tgt, '--json']);
      expect(s.status, s.stderr).toBe(3);
      const out = parseJson(s, S.syncOutput).projections;
      expect(out.find((p) => p.name === 'items')).toMatchObject({ state: 'suspended', reason: 'NEEDS_IMAGES_MODE' });
      expect(h.byName.seen?.needsAction).toBe(out.find((p) => p.name === 'seen')?.state !== 'active');
      const after = await health(tgt);
      expect(after.status).toBe(3);
      expect(after.byName.items?.action).toMatch(/^NEEDS_IMAGES_MODE: /);
      expect(after.byName.items?.action).toContain(`sluice enable ${src} items --mode images`);
    });
  }
});
