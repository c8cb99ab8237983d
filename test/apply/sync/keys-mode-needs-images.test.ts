// a keys mode table suspends image projections with needs images mode but feeds a custom one
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { enable } from '../../../src/capture/index.ts';
import { Syncer, sync } from '../../../src/apply/sync/index.ts';
import type { ChangeEvent } from '../../../src/feed/index.ts';
import type { ProjectionDefinitionInput } from '../../../src/projection/index.ts';
import { cli, dumpFile, highWater, jsonOut, makeSource, projectionRows, tableCells } from '../support/target.ts';
import { SCHEMA, SEED } from '../support/scenario.ts';

/*
 * A keys-mode table journals only keys: there are no before-images to check
 * a target against, so mirror, map and fts5 projections must refuse it
 * (NEEDS_IMAGES_MODE) instead of guessing. A custom handler gets the events
 * with the current row re-read by key.
 */

const IMAGE_KINDS: ProjectionDefinitionInput[] = [
  { name: 'items', source: 'items', kind: 'mirror' },
  { name: 'named', source: 'items', kind: 'map', columns: { id: 'id', name: 'name' } },
  { name: 'items_fts', source: 'items', kind: 'fts5', columns: ['name'] },
];

describe('a table captured in keys mode', () => {
  test('suspends mirror, map and fts5 projections with NEEDS_IMAGES_MODE and creates none of their tables, while a custom projection and other tables sync', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['tags'], { seed: SEED });
    enable(src.db, ['items'], { mode: 'keys' });
    const events: ChangeEvent[] = [];
    const defs: ProjectionDefinitionInput[] = [
      ...IMAGE_KINDS,
      { name: 'item_keys', source: 'items', kind: 'custom', handler: { apply: (e) => void events.push(e) } },
      { name: 'tags', source: 'tags', kind: 'mirror' },
    ];
    const target = path.join(tmp, 'target.db');
    const s = await Syncer.open(src.file, target, { projections: defs });
    try {
      const first = await s.runOnce();
      for (const d of IMAGE_KINDS) {
        expect(
          first.projections.find((p) => p.name === d.name),
          d.name,
        ).toMatchObject({ state: 'suspended', reason: 'NEEDS_IMAGES_MODE', detail: { table: 'items', mode: 'keys' } });
      }
      expect(first.projections.filter((p) => p.state === 'active').map((p) => p.name)).toEqual(['item_keys', 'tags']);
      const tables = Object.keys(dumpFile(target));
      for (const t of ['items', 'named', 'items_fts_src']) expect(tables).not.toContain(t);

      src.db.exec(
        "UPDATE items SET name = 'APPLE' WHERE id = 1; UPDATE items SET id = 42 WHERE id = 2; DELETE FROM items WHERE id = 3; INSERT INTO tags VALUES ('z', 9, 'z')",
      );
      const second = await s.runOnce();
      expect(second.projections.filter((p) => p.state === 'active').map((p) => [p.name, p.seq])).toEqual([
        ['item_keys', highWater(src.db)],
        ['tags', highWater(src.db)],
      ]);
      expect(second.projections.filter((p) => p.state === 'suspended').map((p) => p.reason)).toEqual(
        IMAGE_KINDS.map(() => 'NEEDS_IMAGES_MODE'),
      );
      // Keys mode: no before-image; the after-image is the row as it is now, re-read by key.
      expect(events.map((e) => [e.op, e.image, e.key, e.before, e.after?.name ?? null])).toEqual([
        ['update', 'key', [1n], null, 'APPLE'],
        ['update', 'key', [42n], null, 'Banana'],
        ['delete', 'key', [3n], null, null],
      ]);
      expect(tableCells(s.session.db, 'tgt', 'tags')).toEqual(tableCells(src.db, 'main', 'tags'));
    } finally {
      s.close();
    }
  });

  test('switched from images to keys after a sync: the rebuild is refused with NEEDS_IMAGES_MODE, the stored rows stay as they were, and the CLI exits 3', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const target = path.join(tmp, 'target.db');
    await sync(src.file, target, { projections: IMAGE_KINDS });
    const before = dumpFile(target);

    enable(src.db, ['items'], { mode: 'keys' });
    src.db.exec("UPDATE items SET name = 'changed' WHERE id = 1");
    const r = await sync(src.file, target, { projections: IMAGE_KINDS });
    expect(r.projections.map((p) => [p.name, p.state, p.reason])).toEqual(
      IMAGE_KINDS.map((d) => [d.name, 'suspended', 'NEEDS_IMAGES_MODE']),
    );
    const rows = projectionRows(target);
    for (const d of IMAGE_KINDS) expect(rows.get(d.name), d.name).toMatchObject({ state: 'suspended', reason: 'NEEDS_IMAGES_MODE' });
    const after = dumpFile(target);
    for (const t of ['items', 'named', 'items_fts_src']) expect(after[t], t).toEqual(before[t]);

    fs.writeFileSync(path.join(tmp, 'items.json'), JSON.stringify(IMAGE_KINDS[0]));
    const viaCli = cli(['sync', src.file, target, '--projection', path.join(tmp, 'items.json'), '--json']);
    expect(viaCli.status).toBe(3);
    expect(jsonOut<{ projections: unknown[] }>(viaCli).projections).toEqual([
      expect.objectContaining({ name: 'items', state: 'suspended', reason: 'NEEDS_IMAGES_MODE' }),
    ]);

    // Back in images mode, the suspension clears by itself: the next sync rebuilds from a snapshot.
    enable(src.db, ['items'], { mode: 'images' });
    const healed = await sync(src.file, target, { projections: IMAGE_KINDS });
    expect(healed.projections.map((p) => [p.name, p.state, p.rebuilt])).toEqual(
      IMAGE_KINDS.map((d) => [d.name, 'active', 'TABLE_REARMED']),
    );
    expect(tableCells(src.db, 'main', 'items').length).toBeGreaterThan(0);
  });

  test('a projection suspended before its first build is recorded for health, and builds once the table is back in images mode', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['tags'], { seed: SEED });
    enable(src.db, ['items'], { mode: 'keys' });
    const target = path.join(tmp, 'target.db');
    const mirror = [IMAGE_KINDS[0] as ProjectionDefinitionInput];
    const first = await sync(src.file, target, { projections: mirror });
    expect(first.projections[0]).toMatchObject({ state: 'suspended', reason: 'NEEDS_IMAGES_MODE' });
    expect(projectionRows(target).get('items')).toMatchObject({ state: 'suspended', reason: 'NEEDS_IMAGES_MODE', cursor: null });
    const health = cli(['health', target, '--json']);
    expect(health.status).toBe(3);
    expect(jsonOut<{ projections: { name: string; needsAction: boolean }[] }>(health).projections).toEqual([
      expect.objectContaining({ name: 'items', needsAction: true }),
    ]);

    enable(src.db, ['items'], { mode: 'images' });
    const second = await sync(src.file, target, { projections: mirror });
    expect(second.projections[0]).toMatchObject({ state: 'active', snapshotRows: expect.any(Number) });
    expect(tableCells(src.db, 'main', 'items').length).toBeGreaterThan(0);
    expect(projectionRows(target).get('items')).toMatchObject({ state: 'active' });
  });
});
