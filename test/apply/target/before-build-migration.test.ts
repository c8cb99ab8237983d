// a target written before the protected rebuild migrates in place continues and rebuilds through the shadow
import { test, expect } from '../../support/fixtures.ts';
import { copyOldFixture } from '../../support/old-fixture.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { Syncer, sync } from '../../../src/apply/sync/index.ts';
import { verify, health } from '../../../src/apply/check/index.ts';
import { pythonExec } from '../../support/journal.ts';

/*
 * fixtures/before-build holds a source and a target written by the sluice
 * of 5548475, before the protected rebuild (see make.ts there): the
 * target's projections table has no `build` column. Today's sync opens it,
 * adds the column in place, and goes on from the stored cursors without a
 * rebuild; a reinit of it, or a changed definition, then takes the
 * protected path (built beside the live rows and swapped in).
 */

/** The fixture copied into `tmp`, its cursors pointed at the copy (support/old-fixture.ts). */
function copyFixture(tmp: string): { source: string; target: string } {
  const { source, targets } = copyOldFixture('before-build', tmp, ['target']);
  return { source, target: targets[0] as string };
}

function columns(file: string): string[] {
  const db = openDatabase(file, { readonly: true });
  try {
    return db.prepare("SELECT name FROM pragma_table_info('_sluice_projections')").pluck().all() as string[];
  } finally {
    db.close();
  }
}

test('a target written before the build column gets it at the next sync and goes on from its cursors without a rebuild (the older fingerprint of an fts5 index is stamped anew); a reinit and a changed definition then build a shadow and swap it in', async ({
  tmp,
}) => {
  const { source, target } = copyFixture(tmp);
  expect(columns(target)).not.toContain('build');
  // Read as it is: health reads a missing column as its default.
  expect(health(target).projections.map((p) => [p.name, p.state, p.needsAction])).toEqual([
    ['notes', 'active', false],
    ['notes_fts', 'active', false],
    ['tagged', 'active', false],
  ]);

  pythonExec(
    source,
    "UPDATE notes SET title = 'renamed' WHERE id = 3; DELETE FROM notes WHERE id = 4; INSERT INTO notes VALUES (400, 'new', 'new words', 1)",
  );
  const first = await sync(source, target);
  expect(columns(target)).toContain('build');
  // All three go on from their cursors. An fts5 index is fingerprinted another way since 11243f0
  // (by the columns it reads): its old fingerprint, of the same definition over the same shape, is
  // stamped anew instead of rebuilding it.
  expect(
    first.projections
      .map((p) => [p.name, p.state, p.rebuilt ?? null, p.applied, p.swapped ?? false])
      .sort((x, y) => String(x[0]).localeCompare(String(y[0]))),
  ).toEqual([
    ['notes', 'active', null, 3, false],
    ['notes_fts', 'active', null, 3, false],
    ['tagged', 'active', null, 3, false],
  ]);
  expect((await verify(source, target)).ok).toBe(true);

  // reinit of the map: the protected path (a shadow swapped in), not a rebuild in one transaction.
  const reinit = await Syncer.open(source, target, { reinit: ['tagged'] });
  let building = 0;
  try {
    const r = await reinit.runOnce();
    expect(r.projections.find((p) => p.name === 'tagged')).toMatchObject({ state: 'active', rebuilt: 'REINIT', swapped: true });
    expect(r.projections.find((p) => p.name === 'notes')?.rebuilt).toBeUndefined();
  } finally {
    reinit.close();
  }
  // A changed definition of the mirror's neighbour map, over the migrated target: built beside it, steps visible as `build`.
  const s = await Syncer.open(source, target, {
    projections: [
      { name: 'notes', source: 'notes', kind: 'mirror' },
      { name: 'tagged', source: 'notes', kind: 'map', columns: { id: 'id', title: 'title', tag: { expr: "'v2:' || n" } } },
      { name: 'notes_fts', source: 'notes', kind: 'fts5', columns: ['title', 'body'] },
    ],
    onProgress: (e) => {
      if (e.projection !== 'tagged' || e.phase !== 'snapshot') return;
      const t = openDatabase(target, { readonly: true });
      if (t.prepare("SELECT build IS NOT NULL FROM _sluice_projections WHERE name = 'tagged'").pluck().get() === 1n) building++;
      t.close();
    },
  });
  try {
    const r = await s.runOnce();
    expect(r.projections.find((p) => p.name === 'tagged')).toMatchObject({ state: 'active', rebuilt: 'DEFINITION_CHANGED', swapped: true });
  } finally {
    s.close();
  }
  expect(building, 'a step of the build was seen recorded in the build column').toBeGreaterThan(0);
  const t = openDatabase(target, { readonly: true });
  expect(t.prepare("SELECT count(*) FROM tagged WHERE tag NOT LIKE 'v2:%'").pluck().get()).toBe(0n);
  expect(t.prepare('SELECT count(*) FROM _sluice_projections WHERE build IS NOT NULL').pluck().get()).toBe(0n);
  t.close();
  expect((await verify(source, target)).ok).toBe(true);
});
