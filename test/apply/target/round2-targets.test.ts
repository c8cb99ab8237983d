// targets made by round 2 continue from their cursors and a default built one becomes star without a rebuild
import { test, expect, describe } from '../../support/fixtures.ts';
import { copyOldFixture } from '../../support/old-fixture.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { enable } from '../../../src/capture/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { verify, health } from '../../../src/apply/check/index.ts';
import { pythonExec } from '../../support/journal.ts';

/*
 * fixtures/round2 holds a source and two targets written by the sluice of
 * da3f92f (see its README): default.sqlite built by a plain `sync SRC TGT`,
 * which stored one mirror per captured table and nothing saying they came
 * from the default; defined.sqlite built from definitions. Both go on from
 * their cursors, without a rebuild. The default-built one counts as built
 * by the default ("*"): a table enabled later is mirrored too. The other
 * keeps its stored set.
 */

const outcomes = (r: Awaited<ReturnType<typeof sync>>) =>
  r.projections.map((p) => [p.name, p.state, p.rebuilt ?? null, p.applied]).sort((a, b) => String(a[0]).localeCompare(String(b[0])));

function addTable(source: string): void {
  pythonExec(source, "CREATE TABLE tags (id INTEGER PRIMARY KEY, label TEXT); INSERT INTO tags VALUES (1, 'one'), (2, 'two')");
  const db = openDatabase(source);
  try {
    enable(db, ['tags']);
  } finally {
    db.close();
  }
  pythonExec(source, "INSERT INTO tags VALUES (3, 'three')");
}

describe('targets made by round 2', () => {
  test('the default-built target continues from its cursors and becomes "*": a table enabled later is mirrored', async ({ tmp }) => {
    const {
      source,
      targets: [target],
    } = copyOldFixture('round2', tmp, ['default']);
    const t = target as string;
    expect(health(t).ok).toBe(true);
    const first = await sync(source, t);
    expect(outcomes(first)).toEqual([
      ['notes', 'active', null, 2],
      ['users', 'active', null, 0],
    ]);
    addTable(source);
    const pending = health(t);
    expect(pending.ok).toBe(false);
    expect(pending.projections.find((p) => p.name === 'tags')).toMatchObject({ state: 'pending', needsAction: true });
    const second = await sync(source, t);
    expect(outcomes(second)).toEqual([
      ['notes', 'active', null, 0],
      ['tags', 'active', null, 0],
      ['users', 'active', null, 0],
    ]);
    expect(second.projections.find((p) => p.name === 'tags')?.snapshotRows).toBe(3);
    expect(health(t).ok).toBe(true);
    expect((await verify(source, t)).ok).toBe(true);
  });

  test('the default-built target given a definition keeps "*" beside it: a later plain sync runs both, and mirrors a table enabled later', async ({
    tmp,
  }) => {
    const {
      source,
      targets: [target],
    } = copyOldFixture('round2', tmp, ['default']);
    const t = target as string;
    const open = { name: 'open', source: 'notes', kind: 'map' as const, columns: { id: 'id', title: 'title' }, filter: 'n > 3' };
    const given = await sync(source, t, { projections: [open] });
    expect(outcomes(given)).toEqual([['open', 'active', null, 0]]);
    addTable(source);
    const plain = await sync(source, t);
    expect(plain.projections.map((p) => [p.name, p.rebuilt ?? null]).sort()).toEqual([
      ['notes', null],
      ['open', null],
      ['tags', null],
      ['users', null],
    ]);
    expect(health(t).ok).toBe(true);
  });

  test('the target built from definitions continues from its cursors and keeps its stored set', async ({ tmp }) => {
    const {
      source,
      targets: [target],
    } = copyOldFixture('round2', tmp, ['defined']);
    const t = target as string;
    const first = await sync(source, t);
    expect(outcomes(first)).toEqual([
      ['notes', 'active', null, 2],
      ['notes_fts', 'active', null, 2],
      ['tagged', 'active', null, 2],
    ]);
    addTable(source);
    expect(health(t).ok).toBe(true);
    const second = await sync(source, t);
    expect(second.projections.map((p) => p.name).sort()).toEqual(['notes', 'notes_fts', 'tagged']);
    expect(health(t).ok).toBe(true);
    expect((await verify(source, t)).ok).toBe(true);
  });
});
