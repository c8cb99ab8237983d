import path from 'node:path';
import { test, expect } from '../support/fixtures.ts';
import { Syncer, sync } from '../../src/apply/sync.ts';
import { step, type StepContext, type StepOutcome } from '../../src/apply/step.ts';
import { TARGET_SCHEMA } from '../../src/apply/session.ts';
import { RETIRE_CHUNK } from '../../src/apply/retire.ts';
import { dropProjection } from '../../src/apply/drop.ts';
import { verify } from '../../src/apply/verify.ts';
import { openDatabase } from '../../src/sqlite/connection.ts';
import type { ProjectionDefinition } from '../../src/projection/definition.ts';
import { makeSource } from './support/target.ts';

/*
 * 003: the old state is dropped only after the cutover. The swap renames the
 * old tables aside (DROP TABLE frees every page in one statement: the swap
 * held the target's lock as long as the table is big), and the steps after
 * it delete a bounded part of them at a time, then drop them. Readers and a
 * view over the projection see the new rows from the swap on; the retired
 * rows are nowhere they look. `sluice drop` in between takes them too.
 */

const ROWS = RETIRE_CHUNK * 2 + 300;
const map = (tag: string): ProjectionDefinition => ({
  name: 'tagged',
  source: 't',
  kind: 'map',
  columns: { id: 'id', tag: { expr: `'${tag}' || n` } },
});

/** Steps a rebuild to `tag` up to its swap (its validation passed); then `next` steps on. */
async function swapped(src: string, target: string, tag: string): Promise<{ s: Syncer; next: () => Promise<StepOutcome> }> {
  const s = await Syncer.open(src, target, { projections: [map(tag)] });
  const p = s.projections[0];
  if (p === undefined) throw new Error('no projection');
  const ctx: StepContext = { db: s.session.db, schema: TARGET_SCHEMA, sourcePath: src, batchSize: 100_000 };
  let validated: StepContext['validated'];
  for (let i = 0; i < 40; i++) {
    const out = await step(validated === undefined ? ctx : { ...ctx, validated }, p);
    validated = out.kind === 'validate' ? { seq: out.build.caughtSeq, ok: true } : undefined;
    if (out.kind === 'initialized') return { s, next: () => step(ctx, p) };
  }
  throw new Error('never swapped');
}

function look(target: string) {
  const db = openDatabase(target, { readonly: true });
  try {
    const retired = db
      .prepare("SELECT name FROM sqlite_schema WHERE name LIKE '\\_sluice\\_retired\\_%' ESCAPE '\\'")
      .pluck()
      .all() as string[];
    return {
      live: db.prepare("SELECT count(*) FROM tagged WHERE tag LIKE 'v2:%'").pluck().get(),
      view: db.prepare("SELECT count(*) FROM tags WHERE tag LIKE 'v2:%'").pluck().get(),
      index: db.prepare("SELECT tbl_name FROM sqlite_schema WHERE name = 'by_tag'").pluck().get(),
      retiredRows: retired.map((t) => Number(db.prepare(`SELECT count(*) FROM "${t}"`).pluck().get())),
      listed: db.prepare("SELECT retired FROM _sluice_projections WHERE name = 'tagged'").pluck().get(),
    };
  } finally {
    db.close();
  }
}

test('the old tables a protected rebuild swaps out are renamed aside at the swap and dropped in bounded steps after it, while readers, a view and an index see the new ones', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, 'CREATE TABLE t (id INTEGER PRIMARY KEY, n INTEGER)', ['t'], {
    seed: `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT i, i % 7 FROM c`,
  });
  const target = path.join(tmp, 'cache.db');
  await sync(src.file, target, { projections: [map('v1:')] });
  const user = openDatabase(target);
  user.exec('CREATE VIEW tags AS SELECT tag FROM tagged; CREATE INDEX by_tag ON tagged (tag)');
  user.close();

  const { s, next } = await swapped(src.file, target, 'v2:');
  try {
    const at = look(target);
    expect(at).toMatchObject({ live: BigInt(ROWS), view: BigInt(ROWS), index: 'tagged', retiredRows: [ROWS] });
    expect(JSON.parse(String(at.listed))).toHaveLength(1);
    // One bounded part per step, then the drop.
    const seen: number[][] = [];
    for (let o = await next(); o.kind === 'retiring'; o = await next()) seen.push(look(target).retiredRows);
    expect(seen).toEqual([[ROWS - RETIRE_CHUNK], [ROWS - 2 * RETIRE_CHUNK], []]);
    expect(look(target)).toMatchObject({ live: BigInt(ROWS), view: BigInt(ROWS), index: 'tagged', retiredRows: [], listed: null });
  } finally {
    s.close();
  }
  expect((await verify(src.file, target)).ok).toBe(true);

  // Dropped with the projection when it is removed before its old tables are gone.
  (await swapped(src.file, target, 'v3:')).s.close();
  const again = look(target).retiredRows;
  expect(again).toEqual([ROWS]);
  const dropped = dropProjection(target, 'tagged');
  expect(dropped.dropped).toHaveLength(2);
  expect(look2(target)).toEqual([]);
});

function look2(target: string): unknown[] {
  const db = openDatabase(target, { readonly: true });
  try {
    return db
      .prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE '\\_sluice\\_p%' ESCAPE '\\' AND name NOT LIKE '\\_sluice\\_t%' ESCAPE '\\'",
      )
      .pluck()
      .all();
  } finally {
    db.close();
  }
}
