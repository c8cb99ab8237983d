// a custom handler gets events in seq order and a throw rolls its batch back
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../../support/fixtures.ts';
import { openDatabase } from '../../../../src/sqlite/index.ts';
import { Syncer } from '../../../../src/apply/sync/index.ts';
import type { ChangeEvent, Row } from '../../../../src/feed/index.ts';
import type { CustomHandler, ProjectionDefinitionInput } from '../../../../src/projection/index.ts';
import { cli, dumpFile, highWater, journalSeqs, makeSource, projectionRows } from '../../../apply/support/target.ts';
import { SCHEMA, SEED, writeRound } from '../../../apply/support/scenario.ts';

/** A handler that keeps what it is given in memory and writes its effects to the target through ctx.db. */
function spy() {
  const state = { initRows: [] as Row[], events: [] as ChangeEvent[], failOn: null as string | null };
  const handler: CustomHandler = {
    version: '1',
    async init(rows, { db }) {
      await db.schema.dropTable('effects').ifExists().execute();
      await db.schema
        .createTable('effects')
        .addColumn('seq', 'integer', (c) => c.notNull())
        .addColumn('op', 'text')
        .addColumn('id', 'integer')
        .execute();
      state.initRows = [...rows];
    },
    async apply(event, { db }) {
      state.events.push(event);
      await db.insertInto('effects').values({ seq: event.seq, op: event.op, id: event.key[0] }).execute();
      if (state.failOn !== null && event.after?.name === state.failOn)
        throw new Error(`handler refuses ${state.failOn} at seq ${event.seq}`);
    },
  };
  return { state, handler };
}

function effects(target: string): number[] {
  const db = openDatabase(target);
  try {
    return (db.prepare('SELECT seq FROM effects ORDER BY rowid').pluck().all() as bigint[]).map(Number);
  } finally {
    db.close();
  }
}

describe('a custom projection', () => {
  test('gets the snapshot rows in init, then every event once, in seq order, as exact typed images across batches', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const { state, handler } = spy();
    const target = path.join(tmp, 'target.db');
    const defs: ProjectionDefinitionInput[] = [{ name: 'log', source: 'items', kind: 'custom', handler }];
    const s = await Syncer.open(src.file, target, { projections: defs, batchSize: 4 });
    try {
      const first = await s.runOnce();
      expect(first.projections[0]).toMatchObject({ name: 'log', state: 'active', snapshotRows: 8 });
      expect(state.initRows.map((r) => r.id)).toEqual([1n, 2n, 3n, 4n, 5n, 6n, 7n, 8n]);
      expect(state.initRows[1]).toEqual({ id: 2n, name: 'Banana', qty: 2n, price: 1.25, data: Buffer.alloc(0) });
      expect(state.initRows[6]?.price).toBe(0.30000000000000004);

      const since = highWater(src.db);
      writeRound(src.db);
      const second = await s.runOnce();
      const seqs = journalSeqs(src.db, 'items', since);
      expect(second.projections[0]).toMatchObject({ state: 'active', applied: seqs.length, seq: highWater(src.db) });
      // In seq order, each once, across several batches of 4.
      expect(state.events.map((e) => e.seq)).toEqual(seqs);
      expect(effects(target)).toEqual(seqs);

      const byKind = (pred: (e: ChangeEvent) => boolean) => state.events.find(pred);
      expect(byKind((e) => e.op === 'insert')).toMatchObject({
        table: 'items',
        image: 'full',
        before: null,
        after: { id: 100n, name: 'new 0 0', data: Buffer.from([0, 255]) },
      });
      // A key change is one update carrying both keys and both images.
      expect(byKind((e) => e.op === 'update' && e.beforeKey[0] === 3n)).toMatchObject({
        key: [153n],
        beforeKey: [3n],
        before: { id: 3n, name: 'cherry' },
        after: { id: 153n, name: 'cherry' },
      });
      expect(byKind((e) => e.op === 'delete')).toMatchObject({ key: [5n], before: { id: 5n, name: 'elder' }, after: null });
      // 'apple' -> 'APPLE' in a NOCASE column is a real change.
      expect(byKind((e) => e.op === 'update' && e.key[0] === 1n)).toMatchObject({ before: { name: 'apple' }, after: { name: 'APPLE' } });
    } finally {
      s.close();
    }
  });

  test('gets a batch larger than what is read into memory at once (10,000 events) whole, in seq order, in one transaction', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const { state, handler } = spy();
    const target = path.join(tmp, 'target.db');
    const s = await Syncer.open(src.file, target, {
      projections: [{ name: 'log', source: 'items', kind: 'custom', handler }],
      batchSize: 25_000,
    });
    try {
      await s.runOnce();
      const since = highWater(src.db);
      src.db.exec(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 24000) INSERT INTO items (id, name) SELECT 1000 + i, 'bulk ' || i FROM n",
      );
      // One step: a single batch (and cursor update) of every event, read in pages of 10,000.
      const out = await s.applyBatch('log', since, highWater(src.db));
      expect(out).toMatchObject({ kind: 'applied', events: 24_000, seq: since + 24_000 });
      const seqs = journalSeqs(src.db, 'items', since);
      expect(seqs.length).toBe(24_000);
      expect(state.events.map((e) => e.seq)).toEqual(seqs);
      expect(effects(target)).toEqual(seqs);
    } finally {
      s.close();
    }
  });

  test('that throws rolls back its whole batch (its writes and the cursor); sync reports the error, and the next sync applies the batch once', async ({
    makeDb,
    tmp,
  }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const { state, handler } = spy();
    const target = path.join(tmp, 'target.db');
    const s = await Syncer.open(src.file, target, {
      projections: [{ name: 'log', source: 'items', kind: 'custom', handler }],
      batchSize: 4,
    });
    try {
      await s.runOnce();
      const since = highWater(src.db);
      // 'boom' is the third event of the batch: two effects are written before the throw.
      src.db.exec("INSERT INTO items (id, name) VALUES (20, 'a'), (21, 'b'), (22, 'boom'), (23, 'c')");
      state.failOn = 'boom';
      const before = dumpFile(target);
      const meta = projectionRows(target).get('log');

      const failedRun = await s.runOnce();
      expect(failedRun.projections[0]?.error?.message).toContain(`handler refuses boom at seq ${since + 3}`);
      expect(state.events.map((e) => e.seq)).toEqual([since + 1, since + 2, since + 3]);
      const after = dumpFile(target);
      expect(after.effects).toEqual(before.effects);
      expect(projectionRows(target).get('log')).toEqual({ ...meta, last_error: `handler refuses boom at seq ${since + 3}` });

      state.failOn = null;
      const ok = await s.runOnce();
      expect(ok.projections[0]).toMatchObject({ state: 'active', applied: 4, seq: since + 4 });
      expect(effects(target)).toEqual([since + 1, since + 2, since + 3, since + 4]);
      expect(projectionRows(target).get('log')).toMatchObject({ last_error: null, seq: BigInt(since + 4) });
    } finally {
      s.close();
    }
  });

  test('a throwing handler does not stop the other projections of the same run', async ({ makeDb, tmp }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    const { state, handler } = spy();
    const target = path.join(tmp, 'target.db');
    const s = await Syncer.open(src.file, target, {
      projections: [
        { name: 'log', source: 'items', kind: 'custom', handler },
        { name: 'items_copy', source: 'items', kind: 'mirror', target: 'items_copy' },
      ],
    });
    try {
      await s.runOnce();
      src.db.exec("INSERT INTO items (id, name) VALUES (30, 'boom'), (31, 'fine')");
      state.failOn = 'boom';
      const r = await s.runOnce();
      expect(r.projections.find((p) => p.name === 'log')?.error?.message).toContain('handler refuses boom');
      expect(r.projections.find((p) => p.name === 'items_copy')).toMatchObject({ state: 'active', applied: 2 });
    } finally {
      s.close();
    }
  });

  test('the CLI exits 1 with the handler error, and a later run without the fault catches up', ({ makeDb, tmp }) => {
    const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
    fs.writeFileSync(
      path.join(tmp, 'handler.mjs'),
      `export default {
  async init(_rows, { db }) { await db.schema.createTable('effects').ifNotExists().addColumn('seq', 'integer').execute(); },
  async apply(e, { db }) {
    await db.insertInto('effects').values({ seq: e.seq }).execute();
    if (process.env.FAIL_ON === e.after?.name) throw new Error('handler refuses ' + e.after.name);
  },
};`,
    );
    fs.writeFileSync(path.join(tmp, 'log.json'), JSON.stringify({ name: 'log', source: 'items', kind: 'custom', module: './handler.mjs' }));
    const target = path.join(tmp, 'target.db');
    const args = ['sync', src.file, target, '--projection', path.join(tmp, 'log.json')];
    expect(cli(args).status).toBe(0);
    src.db.exec("INSERT INTO items (id, name) VALUES (20, 'a'), (21, 'boom')");
    const failed = cli(args, { FAIL_ON: 'boom' });
    expect(failed.status).toBe(1);
    expect(failed.stderr).toContain('handler refuses boom');
    expect(effects(target)).toEqual([]);
    // Stored definitions are reloaded from the target when no --projection is given.
    const ok = cli(['sync', src.file, target, '--json']);
    expect(ok.status, ok.stderr).toBe(0);
    expect(effects(target)).toEqual(journalSeqs(src.db, 'items'));
  });
});
