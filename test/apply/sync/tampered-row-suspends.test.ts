// a tampered target row suspends its projection and commits nothing from the batch
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { Syncer } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { cli, dumpFile, highWater, jsonOut, makeSource, projectionRows, tableCells } from '../support/target.ts';
import { syncByLibrary } from '../../cli/support/cli.ts';
import { SCHEMA, SEED, scenarioProjections, writeRound } from '../support/scenario.ts';

interface TamperCase {
  readonly what: string;
  /** SQL on the source before the first sync. */
  readonly setup?: string;
  /** SQL on the target after the first sync. */
  readonly tamper: string;
  readonly projection: string;
  readonly table: string;
  readonly key: readonly unknown[];
  /** What verify reports for the key. */
  readonly diff: 'different' | 'missing';
}

// Each tampered row is changed again by writeRound, after events on other
// keys (so the batch has an already executed prefix to roll back).
const CASES: readonly TamperCase[] = [
  {
    what: 'a NOCASE value changed only in case',
    tamper: "UPDATE items SET name = 'FIG' WHERE id = 6",
    projection: 'items',
    table: 'items',
    key: [6],
    diff: 'different',
  },
  {
    what: 'malformed UTF-8 replaced by other malformed bytes (the same JS string)',
    setup: "UPDATE items SET name = CAST(x'ff41' AS TEXT) WHERE id = 4",
    tamper: "UPDATE items SET name = CAST(x'fe41' AS TEXT) WHERE id = 4",
    projection: 'items',
    table: 'items',
    key: [4],
    diff: 'different',
  },
  {
    what: 'an INTEGER replaced by the equal REAL',
    tamper: "UPDATE tags SET v = 2.0 WHERE k = 'b'",
    projection: 'tags',
    table: 'tags',
    key: ['b', 2],
    diff: 'different',
  },
  { what: 'a deleted row', tamper: 'DELETE FROM items WHERE id = 8', projection: 'items', table: 'items', key: [8], diff: 'missing' },
  {
    what: 'a computed map column',
    tamper: "UPDATE cheap_items SET label = 'x' WHERE item = 2",
    projection: 'cheap_items',
    table: 'cheap_items',
    key: [2],
    diff: 'different',
  },
  {
    what: 'an FTS5 external content row',
    tamper: "UPDATE items_fts_src SET name = 'fog' WHERE _k0 = 6",
    projection: 'items_fts',
    table: 'items_fts',
    key: [6],
    diff: 'different',
  },
];

const ALL = scenarioProjections().map((p) => p.name);

function targetExec(file: string, sql: string): void {
  const db = openDatabase(file);
  try {
    db.exec(sql);
  } finally {
    db.close();
  }
}

describe('a target row that differs from the before-image', () => {
  test.for(CASES)(
    '($what) suspends that projection with TARGET_DIVERGED, table and key; the batch leaves no trace and the others catch up',
    async (c, { makeDb, tmp }) => {
      const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
      if (c.setup !== undefined) src.db.exec(c.setup);
      const target = path.join(tmp, 'target.db');
      // The before-image check itself: with the watch of hand edits off (a Syncer opened after the edit meets it so),
      // which would otherwise see the edit in the target's log first (TARGET_EDITED: a-long-lived-syncer-...).
      const s = await Syncer.open(src.file, target, { projections: scenarioProjections(), watchTarget: false });
      try {
        await s.runOnce();
        targetExec(target, c.tamper);

        // verify sees it, by key, before any sync (comparing only: recording it is verify's own test's subject).
        const v = await verify(src.file, target, { record: false });
        expect(v.ok).toBe(false);
        const pv = v.projections.find((p) => p.name === c.projection);
        expect(pv?.diffs).toEqual([{ key: c.key, kind: c.diff }]);
        expect(v.projections.filter((p) => !p.ok).map((p) => p.name)).toEqual([c.projection]);

        const before = dumpFile(target);
        const metaBefore = projectionRows(target).get(c.projection);
        writeRound(src.db);
        const hw = highWater(src.db);
        const report = await s.runOnce();

        const bad = report.projections.find((p) => p.name === c.projection);
        expect(bad).toMatchObject({ state: 'suspended', reason: 'TARGET_DIVERGED', detail: { table: c.table, key: c.key } });
        // Nothing of the batch was committed: the projection's rows, and its cursor.
        const after = dumpFile(target);
        const owned = c.projection === 'items_fts' ? ['src', 'data', 'idx', 'docsize', 'config'].map((x) => `items_fts_${x}`) : [c.table];
        for (const t of owned) {
          expect(before[t], t).toBeDefined();
          expect(after[t], t).toEqual(before[t]);
        }
        const meta = projectionRows(target).get(c.projection);
        expect(meta).toMatchObject({
          state: 'suspended',
          reason: 'TARGET_DIVERGED',
          cursor: metaBefore?.cursor,
          seq: metaBefore?.seq,
          applied_events: metaBefore?.applied_events,
        });
        expect(JSON.parse(meta?.detail ?? '{}')).toMatchObject({ table: c.table, key: c.key });

        // The others went on, to the source's high-water mark.
        for (const p of report.projections.filter((p) => p.name !== c.projection))
          expect(p, p.name).toMatchObject({ state: 'active', seq: hw });
        if (c.projection !== 'items') expect(tableCells(s.session.db, 'tgt', 'items')).toEqual(tableCells(src.db, 'main', 'items'));
        if (c.projection !== 'tags') expect(tableCells(s.session.db, 'tgt', 'tags')).toEqual(tableCells(src.db, 'main', 'tags'));

        // And they keep going on later runs; the suspended one stays put.
        writeRound(src.db, 1);
        const again = await s.runOnce();
        expect(again.projections.map((p) => [p.name, p.state, p.seq])).toEqual(
          ALL.map((n) => (n === c.projection ? [n, 'suspended', 0] : [n, 'active', highWater(src.db)])),
        );
        expect(projectionRows(target).get(c.projection)?.seq).toBe(metaBefore?.seq);
      } finally {
        s.close();
      }
    },
  );

  test('the CLI: verify exits 3 naming the key and suspends the projection (TARGET_EDITED), and sync then exits 3 naming it', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const target = path.join(tmp, 'target.db');
    // The first sync through the library (what the CLI runs): verify and the sync after it are the CLI's.
    expect(await syncByLibrary(src.file, target)).toBe(0);
    targetExec(target, "UPDATE items SET price = 4.75000001 WHERE id = 6; DELETE FROM tags WHERE k = 'a'");

    const v = cli(['verify', src.file, target, '--json']);
    expect(v.status).toBe(3);
    const vr = jsonOut<{ ok: boolean; projections: { name: string; ok: boolean; diffs: unknown[] }[] }>(v);
    expect(vr.ok).toBe(false);
    expect(vr.projections.map((p) => [p.name, p.ok, p.diffs])).toEqual([
      ['items', false, [{ key: [6], kind: 'different' }]],
      ['tags', false, [{ key: ['a', 1], kind: 'missing' }]],
    ]);

    writeRound(src.db);
    const r = cli(['sync', src.file, target, '--json']);
    expect(r.status).toBe(3);
    const out = jsonOut<{ projections: { name: string; state: string; reason?: string; detail?: { table: string; diffs: unknown[] } }[] }>(
      r,
    );
    expect(out.projections).toEqual([
      expect.objectContaining({
        name: 'items',
        state: 'suspended',
        reason: 'TARGET_EDITED',
        detail: expect.objectContaining({ table: 'items', diffs: [{ key: [6], kind: 'different' }] }),
      }),
      expect.objectContaining({
        name: 'tags',
        state: 'suspended',
        reason: 'TARGET_EDITED',
        detail: expect.objectContaining({ table: 'tags', diffs: [{ key: ['a', 1], kind: 'missing' }] }),
      }),
    ]);
    // Human output says what to do.
    const human = cli(['sync', src.file, target]);
    expect(human.status).toBe(3);
    expect(human.stdout).toMatch(/items: SUSPENDED TARGET_EDITED .*"key":\[6\].*sluice verify/);
  });
});

test('a contentless FTS5 index changed outside sluice suspends with TARGET_DIVERGED and what to do, not a "malformed database" error', async ({
  makeDb,
  tmp,
}) => {
  const { db, file } = makeDb(
    'source.db',
    "CREATE TABLE notes (k TEXT PRIMARY KEY, body TEXT) WITHOUT ROWID; INSERT INTO notes VALUES ('a', 'alpha beta'), ('b', 'gamma')",
  );
  const { enable } = await import('../../../src/capture/index.ts');
  enable(db, ['notes']);
  const target = path.join(tmp, 'target.db');
  const defs = [{ name: 'bare', source: 'notes', kind: 'fts5' as const, columns: ['body'], content: 'none' as const }];
  // With the watch of hand edits off: FTS5's own refusal is the subject (the watch would see the edit first).
  const s = await Syncer.open(file, target, { projections: defs, watchTarget: false });
  try {
    await s.runOnce();
    // Behind sluice's back: the index forgets 'a' (rowid 1 in the key table).
    targetExec(target, "INSERT INTO bare (bare, rowid, body) VALUES ('delete', 1, 'alpha beta')");
    const before = dumpFile(target);
    db.exec("UPDATE notes SET body = 'delta' WHERE k = 'b'; UPDATE notes SET body = 'epsilon' WHERE k = 'a'");
    const r = await s.runOnce();
    expect(r.projections[0]).toMatchObject({ name: 'bare', state: 'suspended', reason: 'TARGET_DIVERGED' });
    expect(r.projections[0]?.error).toBeUndefined();
    const rec = projectionRows(target).get('bare') as { detail: string };
    expect(JSON.parse(rec.detail)).toMatchObject({
      table: 'bare',
      source: 'notes',
      message: expect.stringContaining('Rebuild the projection'),
    });
    // Nothing of the batch was kept, 'b' included.
    const after = dumpFile(target);
    expect(after.bare_src).toEqual(before.bare_src);
  } finally {
    s.close();
  }
});

test("an FTS5 key stored with other bytes than the source's (the same key under NOCASE) suspends its projection with TARGET_DIVERGED, with external content and contentless alike", async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(
    makeDb,
    "CREATE TABLE notes (k TEXT COLLATE NOCASE PRIMARY KEY, body TEXT) WITHOUT ROWID; INSERT INTO notes VALUES ('abc', 'alpha'), ('xyz', 'beta')",
    ['notes'],
  );
  const defs = [
    { name: 'notes_ext', source: 'notes', kind: 'fts5' as const, columns: ['body'], content: 'external' as const },
    { name: 'notes_bare', source: 'notes', kind: 'fts5' as const, columns: ['body'], content: 'none' as const },
  ];
  const s = await Syncer.open(src.file, path.join(tmp, 'target.db'), { projections: defs });
  try {
    await s.runOnce();
    s.session.db.exec(
      "UPDATE tgt.notes_ext_src SET _k0 = 'ABC' WHERE _k0 = 'abc'; UPDATE tgt.notes_bare_src SET _k0 = 'ABC' WHERE _k0 = 'abc'",
    );
    const before = [tableCells(s.session.db, 'tgt', 'notes_ext_src'), tableCells(s.session.db, 'tgt', 'notes_bare_src')];
    src.db.exec("UPDATE notes SET body = 'gamma' WHERE k = 'xyz'; UPDATE notes SET body = 'delta' WHERE k = 'abc'");
    const r = await s.runOnce();
    expect(r.projections.map((p) => [p.name, p.state, p.reason, p.detail?.key])).toEqual([
      ['notes_ext', 'suspended', 'TARGET_DIVERGED', ['abc']],
      ['notes_bare', 'suspended', 'TARGET_DIVERGED', ['abc']],
    ]);
    // Nothing of the batch, not even the change of the other key.
    expect([tableCells(s.session.db, 'tgt', 'notes_ext_src'), tableCells(s.session.db, 'tgt', 'notes_bare_src')]).toEqual(before);
  } finally {
    s.close();
  }
});
