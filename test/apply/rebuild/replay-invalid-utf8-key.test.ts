import { test, expect } from '../../support/fixtures.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';
import { enable } from '../../../src/capture/index.ts';
import { Syncer, sync } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { BUILD_CHUNK } from '../../../src/apply/rebuild/index.ts';
import type { ProjectionDefinition } from '../../../src/projection/index.ts';
import { makeSource, tableCells } from '../support/target.ts';

/*
 * A protected rebuild carries the last key of each part (a chunk of the
 * source copied, or a part of the shadow filled from the staged copy) to the
 * next one. A TEXT key read as a JS string loses malformed UTF-8 (and, in a
 * UTF-16 database, an unpaired surrogate) to U+FFFD, whose bytes sort
 * elsewhere: the next part would start past the rows in between. Here the
 * copy's chunks end on valid keys, and rows deleted during the copy move the
 * end of the fill's first part onto such a key, just before others.
 */

const ROWS = BUILD_CHUNK * 2 + 500;
const SEED = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT printf('k%06d', i), 'word row' || i FROM c`;

const fts = (tokenize?: string): ProjectionDefinition => ({
  name: 'search',
  source: 't',
  kind: 'fts5',
  columns: ['body'],
  content: 'external',
  ...(tokenize === undefined ? {} : { tokenize }),
});

/** Rebuilds the fts5 index of `src` (unicode61 -> porter), deleting `during` after the first step; the keys each fill part ended on. */
async function rebuild(src: { db: Db; file: string }, target: string, during: string): Promise<unknown[]> {
  await sync(src.file, target, { projections: [fts()] });
  const reader = openDatabase(target, { readonly: true });
  const fills: unknown[] = [];
  let steps = 0;
  const s = await Syncer.open(src.file, target, {
    projections: [fts('porter')],
    onProgress: (e) => {
      if (e.phase !== 'snapshot') return;
      const build = reader.prepare("SELECT build FROM _sluice_projections WHERE name = 'search'").pluck().get();
      if (typeof build !== 'string') return;
      if (++steps === 1) src.db.exec(during);
      const fill = (JSON.parse(build) as { fill?: { lastKey?: unknown } }).fill;
      if (fill?.lastKey != null) fills.push(fill.lastKey);
    },
  });
  try {
    const report = await s.runOnce();
    expect(report.projections[0]).toMatchObject({ name: 'search', state: 'active', swapped: true });
  } finally {
    s.close();
    reader.close();
  }
  return fills;
}

/** The rebuilt index holds the rows a fresh sync into a new target makes, and verify agrees. */
async function expectAsFresh(src: { file: string }, target: string, fresh: string): Promise<void> {
  await sync(src.file, fresh, { projections: [fts('porter')] });
  const a = openDatabase(target, { readonly: true });
  const b = openDatabase(fresh, { readonly: true });
  const match = (db: Db, q: string) => Number(db.prepare('SELECT count(*) FROM search WHERE search MATCH ?').pluck().get(q));
  expect(match(a, 'key')).toBe(match(b, 'key'));
  expect(match(a, 'word')).toBe(match(b, 'word'));
  expect(tableCells(a, 'main', 'search_src', ['_k0'])).toEqual(tableCells(b, 'main', 'search_src', ['_k0']));
  a.close();
  b.close();
  const v = await verify(src.file, target);
  expect(v.ok, JSON.stringify(v.projections)).toBe(true);
}

test('a replayed shadow rebuild fills every row when a part ends on a TEXT key that is not valid UTF-8', async ({ makeDb, tmp }) => {
  const src = makeSource(makeDb, 'CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT NOT NULL)', ['t'], {
    seed: `${SEED}; INSERT INTO t VALUES (CAST(x'6b30323030303080' AS TEXT), 'malformed key'), ('k020000é', 'accented key')`,
  });
  const fills = await rebuild(src, `${tmp}/cache.db`, "DELETE FROM t WHERE id = 'k000001'");
  // The first part of the fill ended on the malformed key 'k020000\x80' (carried as its bytes).
  expect(fills[0]).toEqual([{ $t: Buffer.from('6b30323030303080', 'hex').toString('base64') }]);
  await expectAsFresh(src, `${tmp}/cache.db`, `${tmp}/fresh.db`);
});

test('a replayed shadow rebuild of a UTF-16 source fills every row when a part ends on a TEXT key with an unpaired surrogate', async ({
  tmp,
}) => {
  const file = `${tmp}/source.db`;
  const db = openDatabase(file, { create: true });
  try {
    db.pragma("encoding = 'UTF-16le'");
    db.exec(`CREATE TABLE t (id TEXT PRIMARY KEY, body TEXT NOT NULL); ${SEED}`);
    // 'k020000' and an unpaired high surrogate (its UTF-16LE bytes), then keys that sort after it, byte by byte.
    const lone = `${Buffer.from('k020000', 'utf16le').toString('hex')}00d8`;
    db.exec(`INSERT INTO t VALUES (CAST(x'${lone}' AS TEXT), 'lone key')`);
    for (const [i, ch] of ['\u0100', '\ue000', '\u00e9', '\ufffd'].entries())
      db.prepare('INSERT INTO t VALUES (?, ?)').run(`k020000${ch}`, `other${i} key`);
    enable(db, ['t']);
    const fills = await rebuild({ db, file }, `${tmp}/cache.db`, "DELETE FROM t WHERE id IN ('k000001', 'k000002')");
    expect(fills[0]).toEqual([{ $t: Buffer.from(lone, 'hex').toString('base64') }]);
    await expectAsFresh({ file }, `${tmp}/cache.db`, `${tmp}/fresh.db`);
  } finally {
    db.close();
  }
});
