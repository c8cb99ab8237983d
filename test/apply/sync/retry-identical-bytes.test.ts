// retrying the same batch gives identical target bytes
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { Syncer } from '../../../src/apply/sync/index.ts';
import { FailClosedError } from '../../../src/errors.ts';
import type { StepOutcome } from '../../../src/apply/sync/index.ts';
import { dumpDatabase, highWater, journalSeqs, tableCells, makeSource } from '../support/target.ts';
import { SCHEMA, SEED, scenarioProjections, writeRound } from '../support/scenario.ts';

const NAMES = ['items', 'tags', 'cheap_items', 'items_fts', 'tag_log'];

async function openTarget(source: string, target: string): Promise<Syncer> {
  const s = await Syncer.open(source, target, { projections: scenarioProjections(), acknowledge: false });
  const r = await s.runOnce();
  expect(r.projections.map((p) => [p.name, p.state])).toEqual(NAMES.map((n) => [n, 'active']));
  return s;
}

async function applyAll(s: Syncer, from: number, to: number): Promise<StepOutcome[]> {
  const out: StepOutcome[] = [];
  for (const n of NAMES) out.push(await s.applyBatch(n, from, to));
  return out;
}

function withoutFtsShadow(dump: Record<string, unknown>): Record<string, unknown> {
  return Object.fromEntries(Object.entries(dump).filter(([t]) => !/^items_fts_(data|idx|docsize|config)$/.test(t)));
}

function matches(s: Syncer, word: string): unknown[] {
  return s.session.db.prepare('SELECT rowid FROM tgt.items_fts WHERE items_fts MATCH ? ORDER BY rowid').pluck().all(word);
}

describe('an explicit batch (from, to] applied to a target', () => {
  test('applied 1, 2 or 10 times leaves the same target bytes, rows and cursor as once', async ({ makeDb, tmp }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const syncers = new Map<number, Syncer>();
    for (const times of [1, 2, 10]) syncers.set(times, await openTarget(src.file, path.join(tmp, `t${times}.db`)));
    const from = highWater(src.db);
    writeRound(src.db);
    const to = highWater(src.db);
    expect(to - from).toBeGreaterThan(25);

    const dumps = new Map<number, ReturnType<typeof dumpDatabase>>();
    try {
      for (const [times, s] of syncers) {
        const first = await applyAll(s, from, to);
        expect(first.map((o) => o.kind)).toEqual(NAMES.map(() => 'applied'));
        const once = dumpDatabase(s.session.db, 'tgt');
        for (let i = 1; i < times; i++) {
          const again = await applyAll(s, from, to);
          expect(again.map((o) => o.kind)).toEqual(NAMES.map(() => 'current'));
          // Byte for byte, metadata included (cursor, seq, applied count, clock columns).
          expect(dumpDatabase(s.session.db, 'tgt')).toEqual(once);
        }
        dumps.set(times, dumpDatabase(s.session.db, 'tgt', { omitClock: true }));

        // The mirrors equal the source, and the custom projection saw each event once.
        expect(tableCells(s.session.db, 'tgt', 'items')).toEqual(tableCells(src.db, 'main', 'items'));
        expect(tableCells(s.session.db, 'tgt', 'tags')).toEqual(tableCells(src.db, 'main', 'tags'));
        const seen = (s.session.db.prepare('SELECT seq FROM tgt.applications ORDER BY seq').pluck().all() as bigint[]).map(Number);
        expect(seen).toEqual(journalSeqs(src.db, 'tags', from));
        const meta = s.session.db.prepare('SELECT DISTINCT seq, state FROM tgt._sluice_projections').all();
        expect(meta).toEqual([{ seq: BigInt(to), state: 'active' }]);
      }
    } finally {
      for (const s of syncers.values()) s.close();
    }
    // Three targets, three retry counts: the same rows and cursors.
    expect(dumps.get(2)).toEqual(dumps.get(1));
    expect(dumps.get(10)).toEqual(dumps.get(1));
  });

  test('an overlapping batch applies only the part after the stored cursor, and an older batch is a no-op', async ({ makeDb, tmp }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const whole = await openTarget(src.file, path.join(tmp, 'whole.db'));
    const split = await openTarget(src.file, path.join(tmp, 'split.db'));
    try {
      const from = highWater(src.db);
      writeRound(src.db);
      const mid = highWater(src.db);
      writeRound(src.db, 1);
      const to = highWater(src.db);

      await applyAll(whole, from, to);
      await applyAll(split, from, mid);
      const tagEvents = journalSeqs(src.db, 'tags', mid).length;
      const overlap = await applyAll(split, from, to);
      expect(overlap.map((o) => o.kind)).toEqual(NAMES.map(() => 'applied'));
      // The custom projection counts events: only those after `mid` were applied again.
      const custom = overlap[NAMES.indexOf('tag_log')];
      expect(custom).toMatchObject({ kind: 'applied', events: tagEvents, seq: to });
      // FTS5's segment layout depends on how many transactions wrote it, so its
      // shadow tables are left out; its content table and its answers are compared.
      expect(withoutFtsShadow(dumpDatabase(split.session.db, 'tgt', { omitClock: true }))).toEqual(
        withoutFtsShadow(dumpDatabase(whole.session.db, 'tgt', { omitClock: true })),
      );
      for (const word of ['new', 'fig', 'banana', 'apple', 'date']) expect(matches(split, word), word).toEqual(matches(whole, word));
      expect(() => split.session.db.exec("INSERT INTO tgt.items_fts (items_fts) VALUES ('integrity-check')")).not.toThrow();

      // A batch entirely before the cursor changes nothing.
      const before = dumpDatabase(split.session.db, 'tgt');
      expect((await applyAll(split, from, mid)).map((o) => o.kind)).toEqual(NAMES.map(() => 'current'));
      expect(dumpDatabase(split.session.db, 'tgt')).toEqual(before);
    } finally {
      whole.close();
      split.close();
    }
  });

  test('a batch that starts after the stored cursor is a BATCH_GAP error and writes nothing', async ({ makeDb, tmp }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const s = await openTarget(src.file, path.join(tmp, 't.db'));
    try {
      const from = highWater(src.db);
      writeRound(src.db);
      const to = highWater(src.db);
      const before = dumpDatabase(s.session.db, 'tgt');
      for (const name of NAMES) {
        let thrown: unknown;
        try {
          await s.applyBatch(name, from + 3, to);
        } catch (err) {
          thrown = err;
        }
        expect(thrown, name).toBeInstanceOf(FailClosedError);
        expect((thrown as FailClosedError).code).toBe('BATCH_GAP');
        expect((thrown as FailClosedError).message).toContain(`${from + 1}..${from + 3}`);
      }
      expect(dumpDatabase(s.session.db, 'tgt')).toEqual(before);
      // The contiguous batch still applies afterwards.
      expect((await applyAll(s, from, to)).map((o) => o.kind)).toEqual(NAMES.map(() => 'applied'));
    } finally {
      s.close();
    }
  });
});
