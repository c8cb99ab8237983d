// a replayed shadow rebuild cut off by a column added to its source starts again over the new shape
import { test, expect } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { Syncer, sync } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { alter } from '../../../src/capture/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import type { ProjectionDefinition } from '../../../src/projection/index.ts';
import { makeSource } from '../support/target.ts';

/*
 * An fts5 index reads only the columns it names, so a column added to its
 * source (sluice alter) leaves its fingerprint as it was. Its protected
 * rebuild stages a copy of every source column, though: a build stopped
 * midway, then resumed after the column was added, would copy the new
 * column into a staged copy that lacks it. It is rolled back and built
 * again over the new shape instead, and swapped in.
 */

const ROWS = BUILD_CHUNK * 2 + 10;

test('a replayed shadow rebuild stopped midway, then a column added to its source: the next run builds it again over the new shape and swaps it in', async ({
  makeDb,
  tmp,
}) => {
  const src = makeSource(makeDb, 'CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)', ['t'], {
    seed: `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT i, 'row ' || i FROM c`,
  });
  const target = `${tmp}/cache.db`;
  const fts = (tokenize: string): ProjectionDefinition => ({
    name: 'search',
    source: 't',
    kind: 'fts5',
    columns: ['body'],
    content: 'none',
    tokenize,
  });
  await sync(src.file, target, { projections: [fts('unicode61')] });

  // Stopped after the first step of the rebuild.
  const stop = new AbortController();
  const s = await Syncer.open(src.file, target, { projections: [fts('porter')], onProgress: () => stop.abort() });
  const cut = await s.runOnce({ signal: stop.signal });
  s.close();
  expect(cut.projections[0]?.stopped).toBe(true);
  const look = () => {
    const db = openDatabase(target, { readonly: true });
    try {
      return db.prepare("SELECT build FROM _sluice_projections WHERE name = 'search'").pluck().get();
    } finally {
      db.close();
    }
  };
  expect(typeof look(), 'a build in progress').toBe('string');

  alter(src.db, 'ALTER TABLE t ADD COLUMN extra TEXT');
  src.db.exec("UPDATE t SET extra = 'x', body = 'changed ' || id WHERE id % 1000 = 0");
  const done = await sync(src.file, target, { projections: [fts('porter')] });
  expect(done.projections[0], JSON.stringify(done.projections[0])).toMatchObject({ state: 'active', swapped: true });
  expect(look()).toBeNull();
  const db = openDatabase(target, { readonly: true });
  expect(Number(db.prepare("SELECT count(*) FROM search WHERE search MATCH 'changed'").pluck().get())).toBe(Math.floor(ROWS / 1000));
  expect(db.prepare("SELECT name FROM sqlite_schema WHERE name LIKE '\\_sluice\\_build\\_%' ESCAPE '\\'").all()).toEqual([]);
  db.close();
  expect((await verify(src.file, target)).ok).toBe(true);
});
