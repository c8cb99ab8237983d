// an fts5 index answers queries like one built from scratch
import path from 'node:path';
import fc from 'fast-check';
import { test, expect } from '../../../support/fixtures.ts';
import { openDatabase, type Db } from '../../../../src/sqlite/index.ts';
import { enable } from '../../../../src/capture/index.ts';
import { sync } from '../../../../src/apply/sync/index.ts';
import type { ProjectionDefinitionInput } from '../../../../src/projection/index.ts';

/*
 * Incremental FTS5 (external content and contentless) against an index built
 * from scratch over the same source, and against the source rows themselves:
 * every query returns the same keys (and, for an INTEGER PRIMARY KEY source,
 * the same rowids). A stale entry left by a wrong 'delete' shows up as an
 * extra hit; a missed insert as a missing one.
 */

const SCHEMA = `
CREATE TABLE docs (id INTEGER PRIMARY KEY, title TEXT, body TEXT);
CREATE TABLE notes (owner TEXT NOT NULL COLLATE NOCASE, n INTEGER NOT NULL, body TEXT, PRIMARY KEY (owner, n)) WITHOUT ROWID;
`;

const PROJECTIONS: ProjectionDefinitionInput[] = [
  { name: 'docs_ext', source: 'docs', kind: 'fts5', columns: ['title', 'body'], content: 'external' },
  { name: 'docs_none', source: 'docs', kind: 'fts5', columns: ['title', 'body'], content: 'none' },
  { name: 'notes_ext', source: 'notes', kind: 'fts5', columns: ['body'], content: 'external' },
  { name: 'notes_none', source: 'notes', kind: 'fts5', columns: ['body'], content: 'none' },
];

const WORDS = ['alpha', 'beta', 'gamma', 'delta', 'Alpha', 'BETA'];
const QUERIES = ['alpha', 'beta', 'gamma', 'delta', 'alpha beta', '"alpha beta"', 'alpha OR delta', 'gamma NOT beta'];
const DOC_QUERIES = [...QUERIES, 'title : alpha', 'body : gamma'];

const textArb = fc.option(
  fc.array(fc.constantFrom(...WORDS), { minLength: 0, maxLength: 5 }).map((w) => w.join(' ')),
  { freq: 6 },
);
const opArb = fc.oneof(
  {
    weight: 4,
    arbitrary: fc.record({ kind: fc.constant('docInsert' as const), id: fc.integer({ min: 1, max: 8 }), title: textArb, body: textArb }),
  },
  {
    weight: 3,
    arbitrary: fc.record({ kind: fc.constant('docUpdate' as const), pick: fc.nat(), title: fc.option(textArb), body: fc.option(textArb) }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('docRekey' as const), pick: fc.nat(), id: fc.integer({ min: 1, max: 10 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('docDelete' as const), pick: fc.nat() }) },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('noteInsert' as const),
      owner: fc.constantFrom('ann', 'Ann', 'bob'),
      n: fc.integer({ min: 1, max: 3 }),
      body: textArb,
    }),
  },
  {
    weight: 3,
    arbitrary: fc.record({
      kind: fc.constant('noteUpdate' as const),
      pick: fc.nat(),
      owner: fc.option(fc.constantFrom('ann', 'ANN', 'bob', 'cy')),
      body: fc.option(textArb),
    }),
  },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('noteDelete' as const), pick: fc.nat() }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('sync' as const), batch: fc.integer({ min: 1, max: 6 }) }) },
);
type Op = typeof opArb extends fc.Arbitrary<infer T> ? T : never;

function pick(db: Db, table: string, n: number): unknown[] | undefined {
  const keys = table === 'docs' ? 'id' : 'owner, n';
  const rows = db.prepare(`SELECT ${keys} FROM ${table} ORDER BY ${keys}`).raw().all() as unknown[][];
  return rows.length === 0 ? undefined : rows[n % rows.length];
}

async function run(db: Db, source: string, target: string, op: Op): Promise<void> {
  switch (op.kind) {
    case 'docInsert':
      db.prepare('INSERT INTO docs (id, title, body) VALUES (?, ?, ?) ON CONFLICT DO NOTHING').run(BigInt(op.id), op.title, op.body);
      return;
    case 'docUpdate': {
      const k = pick(db, 'docs', op.pick);
      const set = [...(op.title === null ? [] : [['title', op.title]]), ...(op.body === null ? [] : [['body', op.body]])] as [
        string,
        string | null,
      ][];
      if (k !== undefined && set.length > 0)
        db.prepare(`UPDATE docs SET ${set.map(([c]) => `${c} = ?`).join(', ')} WHERE id = ?`).run(...set.map(([, v]) => v), ...k);
      return;
    }
    case 'docRekey': {
      const k = pick(db, 'docs', op.pick);
      if (k !== undefined) db.prepare('UPDATE OR IGNORE docs SET id = ? WHERE id = ?').run(BigInt(op.id), ...k);
      return;
    }
    case 'docDelete': {
      const k = pick(db, 'docs', op.pick);
      if (k !== undefined) db.prepare('DELETE FROM docs WHERE id = ?').run(...k);
      return;
    }
    case 'noteInsert':
      db.prepare('INSERT INTO notes (owner, n, body) VALUES (?, ?, ?) ON CONFLICT DO NOTHING').run(op.owner, BigInt(op.n), op.body);
      return;
    case 'noteUpdate': {
      const k = pick(db, 'notes', op.pick);
      const set = [...(op.owner === null ? [] : [['owner', op.owner]]), ...(op.body === null ? [] : [['body', op.body]])] as [
        string,
        string | null,
      ][];
      if (k !== undefined && set.length > 0)
        db.prepare(`UPDATE OR IGNORE notes SET ${set.map(([c]) => `${c} = ?`).join(', ')} WHERE owner = ? AND n = ?`).run(
          ...set.map(([, v]) => v),
          ...k,
        );
      return;
    }
    case 'noteDelete': {
      const k = pick(db, 'notes', op.pick);
      if (k !== undefined) db.prepare('DELETE FROM notes WHERE owner = ? AND n = ?').run(...k);
      return;
    }
    case 'sync': {
      const r = await sync(source, target, { projections: PROJECTIONS, batchSize: op.batch });
      for (const p of r.projections) expect([p.name, p.state, p.reason]).toEqual([p.name, 'active', undefined]);
    }
  }
}

/** Keys (and rowids) of the rows an FTS5 projection matches. */
function hits(db: Db, name: string, query: string): { keys: unknown[][]; rowids: unknown[] } {
  const keyCols = name.startsWith('docs') ? 's._k0' : 's._k0, s._k1';
  const keys = db
    .prepare(`SELECT ${keyCols} FROM ${name}_src s WHERE s.rowid IN (SELECT rowid FROM ${name} WHERE ${name} MATCH ?) ORDER BY ${keyCols}`)
    .raw()
    .all(query) as unknown[][];
  const rowids = db.prepare(`SELECT rowid FROM ${name} WHERE ${name} MATCH ? ORDER BY rowid`).pluck().all(query);
  return { keys, rowids };
}

/** What a single-word query must match, computed from the source rows (unicode61 folds case). */
function expectedKeys(db: Db, table: 'docs' | 'notes', word: string): unknown[][] {
  const rows = db
    .prepare(
      table === 'docs'
        ? "SELECT id, coalesce(title, '') || ' ' || coalesce(body, '') FROM docs ORDER BY id"
        : "SELECT owner, n, coalesce(body, '') FROM notes ORDER BY owner, n",
    )
    .raw()
    .all() as unknown[][];
  return rows
    .filter((r) =>
      String(r[r.length - 1])
        .toLowerCase()
        .split(' ')
        .includes(word),
    )
    .map((r) => r.slice(0, -1));
}

test('FTS5 indexes synced incrementally under random inserts, updates, key changes and deletes answer every query like indexes built from scratch', async ({
  tmp,
}) => {
  let n = 0;
  await fc.assert(
    fc.asyncProperty(fc.array(opArb, { minLength: 1, maxLength: 35 }), fc.nat({ max: 35 }), async (ops, startAt) => {
      const dir = path.join(tmp, `run${n++}`);
      const source = `${dir}-source.db`;
      const target = `${dir}-target.db`;
      const fresh = `${dir}-fresh.db`;
      const db = openDatabase(source, { create: true });
      try {
        db.exec(SCHEMA);
        enable(db, ['docs', 'notes']);
        const first = Math.min(startAt, ops.length);
        for (const op of ops.slice(0, first)) if (op.kind !== 'sync') await run(db, source, target, op);
        await run(db, source, target, { kind: 'sync', batch: 4 });
        for (const op of ops.slice(first)) await run(db, source, target, op);
        await run(db, source, target, { kind: 'sync', batch: 2 });
        await sync(source, fresh, { projections: PROJECTIONS });

        const t = openDatabase(target);
        const f = openDatabase(fresh);
        try {
          for (const p of PROJECTIONS) {
            expect(() => t.exec(`INSERT INTO ${p.name} (${p.name}) VALUES ('integrity-check')`), p.name).not.toThrow();
            const isDocs = p.source === 'docs';
            for (const q of isDocs ? DOC_QUERIES : QUERIES) {
              const got = hits(t, p.name, q);
              const want = hits(f, p.name, q);
              expect(got.keys, `${p.name} MATCH ${q}`).toEqual(want.keys);
              // An INTEGER PRIMARY KEY is the FTS rowid, so the rowids agree too.
              if (isDocs) expect(got.rowids, `${p.name} MATCH ${q} (rowids)`).toEqual(want.rowids);
              if (/^[a-z]+$/.test(q))
                expect(got.keys, `${p.name} MATCH ${q} (source)`).toEqual(expectedKeys(db, isDocs ? 'docs' : 'notes', q));
            }
          }
        } finally {
          t.close();
          f.close();
        }
      } finally {
        db.close();
      }
    }),
    { numRuns: 20 },
  );
});
