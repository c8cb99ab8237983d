// a sync killed at any phase boundary converges on rerun without applying an event twice
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import {
  cli,
  dumpFile,
  fileTableCells,
  highWater,
  journalSeqs,
  jsonOut,
  makeSource,
  projectionRows,
  tableCells,
  type CliResult,
} from '../support/target.ts';
import { SCHEMA, SEED, writeRound } from '../support/scenario.ts';

/*
 * The CLI `sync` runs in a real subprocess that SIGKILLs itself at a phase
 * boundary (SLUICE_CRASH_AT): between reading a batch and committing it,
 * right after a commit, and after every commit but before the
 * acknowledgement. A rerun must converge to exactly the source, and the
 * custom projection (which records every event it is given, in the target
 * transaction) must have seen each event once.
 */

// The handler as a TS module (loaded by the compiled CLI, on plain Node, through
// tsx) or, where that is not under test, as plain JS (a faster start).
const RECORDER = `
interface Ctx { readonly db: any }
const handler = {
  version: '1',
  async init(_rows: Iterable<unknown>, { db }: Ctx): Promise<void> {
    await db.schema.dropTable('applications').ifExists().execute();
    await db.schema.createTable('applications').addColumn('seq', 'integer', (c: any) => c.notNull()).addColumn('op', 'text', (c: any) => c.notNull()).execute();
  },
  async apply(event: { readonly seq: number; readonly op: string }, { db }: Ctx): Promise<void> {
    await db.insertInto('applications').values({ seq: event.seq, op: event.op }).execute();
  },
};
export default handler;
`;
const RECORDER_JS = RECORDER.replace('interface Ctx { readonly db: any }', '').replace(
  /: (Iterable<unknown>|Ctx|Promise<void>|any|\{ readonly seq: number; readonly op: string \})/g,
  '',
);

const DEFINITIONS = [
  { name: 'tag_log', source: 'tags', kind: 'custom', module: './recorder.mjs' },
  { name: 'items', source: 'items', kind: 'mirror' },
  {
    name: 'cheap_items',
    source: 'items',
    kind: 'map',
    columns: { item: 'id', label: { expr: "upper(name) || ':' || coalesce(qty, '-')" }, total: { expr: 'qty * price' } },
    filter: "price < 3 AND name >= 'b'",
  },
  { name: 'items_fts', source: 'items', kind: 'fts5', columns: ['name'], content: 'none' },
  { name: 'tags', source: 'tags', kind: 'mirror' },
];
const NAMES = DEFINITIONS.map((d) => d.name);

function setup(makeDb: (name?: string, schema?: string) => { db: Db; file: string }, tmp: string, handler: 'ts' | 'js' = 'js') {
  const src = makeSource(makeDb, SCHEMA, ['items', 'tags'], { seed: SEED });
  fs.writeFileSync(path.join(tmp, `recorder.${handler === 'ts' ? 'ts' : 'mjs'}`), handler === 'ts' ? RECORDER : RECORDER_JS);
  const defs = path.join(tmp, 'projections.json');
  fs.writeFileSync(
    defs,
    JSON.stringify(DEFINITIONS.map((d) => (d.kind === 'custom' ? { ...d, module: `./recorder.${handler === 'ts' ? 'ts' : 'mjs'}` } : d))),
  );
  const target = path.join(tmp, 'target.db');
  const run = (crashAt?: string, batch = 5): CliResult =>
    cli(
      ['sync', src.file, target, '--projection', defs, '--batch', String(batch), '--json'],
      crashAt === undefined ? {} : { SLUICE_CRASH_AT: crashAt },
    );
  return { src, target, run };
}

function expectKilled(r: CliResult): void {
  expect(r.signal, `expected SIGKILL, got status ${String(r.status)}: ${r.stderr}`).toBe('SIGKILL');
  expect(r.status).toBeNull();
}

/** The seqs the custom handler recorded, in the order it was given them. */
function recordedSeqs(target: string): number[] {
  const db = openDatabase(target);
  try {
    return (db.prepare('SELECT seq FROM applications ORDER BY rowid').pluck().all() as bigint[]).map(Number);
  } finally {
    db.close();
  }
}

/** Acknowledged seqs in the source, by consumer name. */
function acks(db: Db): Record<string, number> {
  const rows = db.prepare('SELECT name, seq FROM main._sluice_consumers ORDER BY name').raw().all() as [string, bigint][];
  return Object.fromEntries(rows.map(([n, s]) => [n, Number(s)]));
}

/** `r` is the rerun without a crash point. */
async function expectConverged(src: { db: Db; file: string }, target: string, r: CliResult, since: number): Promise<void> {
  expect(r.status, r.stderr).toBe(0);
  const hw = highWater(src.db);
  const out = jsonOut<{ projections: { name: string; state: string; seq: number }[] }>(r);
  expect(out.projections.map((p) => [p.name, p.state, p.seq])).toEqual(NAMES.map((n) => [n, 'active', hw]));
  // Exactly the source, byte for byte.
  expect(fileTableCells(target, 'items')).toEqual(tableCells(src.db, 'main', 'items'));
  expect(fileTableCells(target, 'tags')).toEqual(tableCells(src.db, 'main', 'tags'));
  expect((await verify(src.file, target)).ok).toBe(true);
  // Every tags event after the snapshot was given to the handler once, in seq order, across runs.
  expect(recordedSeqs(target)).toEqual(journalSeqs(src.db, 'tags', since));
  expect(Object.values(acks(src.db))).toEqual(NAMES.map(() => hw));
}

describe('a sync killed with SIGKILL', () => {
  test('between reading a batch and committing it: nothing of the batch is in the target, and the rerun converges', async ({
    makeDb,
    tmp,
  }) => {
    const { src, target, run } = setup(makeDb, tmp);
    expect(run().status).toBe(0);
    const since = highWater(src.db);
    writeRound(src.db);
    writeRound(src.db, 1);
    const before = dumpFile(target);

    expectKilled(run('before-commit'));
    expect(dumpFile(target)).toEqual(before);
    await expectConverged(src, target, run(), since);
  });

  test('right after committing a batch: that batch stays applied and the rerun continues after it, never applying it again', async ({
    makeDb,
    tmp,
  }) => {
    const { src, target, run } = setup(makeDb, tmp);
    expect(run().status).toBe(0);
    const since = highWater(src.db);
    writeRound(src.db);
    writeRound(src.db, 1);
    const before = projectionRows(target);

    expectKilled(run('after-commit'));
    // The first projection committed exactly its first batch of 5 events (rows and cursor together); the others nothing.
    const after = projectionRows(target);
    const firstFive = journalSeqs(src.db, 'tags', since).slice(0, 5);
    expect(Number(after.get('tag_log')?.seq)).toBe(firstFive[4]);
    expect(recordedSeqs(target)).toEqual(firstFive);
    for (const n of NAMES.slice(1)) expect(after.get(n), n).toEqual(before.get(n));

    await expectConverged(src, target, run(), since);
  });

  test('after every commit but before the acknowledgement: the target is current, the acknowledgement lags, and the rerun applies nothing', async ({
    makeDb,
    tmp,
  }) => {
    const { src, target, run } = setup(makeDb, tmp);
    expect(run().status).toBe(0);
    const since = highWater(src.db);
    const acked = acks(src.db);
    expect(Object.values(acked)).toEqual(NAMES.map(() => since));
    writeRound(src.db);
    const hw = highWater(src.db);

    expectKilled(run('before-ack', 1000));
    expect([...projectionRows(target).values()].map((p) => [p.name, p.state, Number(p.seq)])).toEqual(
      [...NAMES].sort().map((n) => [n, 'active', hw]),
    );
    // The acknowledgement is separate and lags; the target's cursor is the truth.
    expect(acks(src.db)).toEqual(acked);

    const rerun = run();
    expect(jsonOut<{ projections: { applied: number }[] }>(rerun).projections.map((p) => p.applied)).toEqual(NAMES.map(() => 0));
    await expectConverged(src, target, rerun, since);
  });

  test('during the first snapshot: no half-built projection is left, and the rerun builds every projection (a TS handler module)', async ({
    makeDb,
    tmp,
  }) => {
    const { src, target, run } = setup(makeDb, tmp, 'ts');
    expectKilled(run('before-commit'));
    expect(projectionRows(target).size).toBe(0);
    expect(Object.keys(dumpFile(target)).filter((t) => !t.startsWith('_sluice_'))).toEqual([]);

    expectKilled(run('after-commit'));
    // One projection was built, with its starting cursor, in one transaction; no other is visible.
    expect([...projectionRows(target).values()].map((p) => [p.name, p.state])).toEqual([['tag_log', 'active']]);

    const since = Number(projectionRows(target).get('tag_log')?.seq);
    writeRound(src.db);
    await expectConverged(src, target, run(), since);
  });
});
