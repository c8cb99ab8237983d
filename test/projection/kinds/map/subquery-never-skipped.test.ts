// a map whose computed column reads a column through a subquery is never skipped; one that reads it plainly skips what it does not read
import path from 'node:path';
import { test, expect } from '../../../support/fixtures.ts';
import { compileAgainstSource, parseDefinition, type ProjectionDefinitionInput } from '../../../../src/projection/index.ts';
import { InvalidInputError } from '../../../../src/errors.ts';
import { compiledFor, stageBatch } from '../../support/batch.ts';
import { FEEDS, throughApplier } from '../../support/applier.ts';

/*
 * Issue 22, item 3. What a map reads is what SQLite compiles its SQL to
 * read; an expression with a subquery reads "every column", whatever the
 * subquery names. sync and import refuse such an expression when they
 * compile a definition (SQLite judges it as a generated column), so here
 * the map is compiled as stored definitions are (compileProjection, no
 * probe) and the batch goes through the one applier, as sync feeds it (the
 * journal) and as import does (decoded events). A batch of counter-only
 * updates writes its rows again; the same map with the same column read
 * plainly checks every event and writes none, and applies a title change.
 */

const SCHEMA = `CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT, comment_count INTEGER NOT NULL DEFAULT 0);
INSERT INTO issues (id, title) VALUES (1, 'one'), (2, 'two'), (3, 'three');`;

const SUBQUERY: ProjectionDefinitionInput = {
  name: 'via_subquery',
  source: 'issues',
  kind: 'map',
  columns: { id: 'id', loud: { expr: '(SELECT upper(title))', type: 'TEXT' } },
};
const PLAIN: ProjectionDefinitionInput = {
  name: 'plain',
  source: 'issues',
  kind: 'map',
  columns: { id: 'id', loud: { expr: 'upper(title)', type: 'TEXT' } },
};

/** SQL run in the batch's transaction before it (rolled back with it): a TEMP trigger noting each row the batch writes into tgt.`table`. */
function wrote(table: string): string {
  return `CREATE TEMP TABLE written (id); CREATE TEMP TRIGGER written_${table} AFTER INSERT ON tgt.${table} BEGIN INSERT INTO written VALUES (new.id); END;`;
}
const writes = (db: Parameters<typeof compiledFor>[0]) =>
  (db.prepare('SELECT id FROM temp.written ORDER BY id').pluck().all() as bigint[]).map(Number);

test('a counter-only batch is written to a map that reads title through a subquery, and only checked by the same map reading it plainly', async ({
  tmp,
}) => {
  const counters = ['UPDATE issues SET comment_count = comment_count + 1', 'UPDATE issues SET comment_count = 5 WHERE id = 2'];
  const { db, lo, hi } = await stageBatch(path.join(tmp, 's.db'), path.join(tmp, 't.db'), {
    schema: SCHEMA,
    tables: ['issues'],
    // Built by sync with the plain map only; the subquery map's rows are the same (its table is made below).
    projections: [PLAIN],
    before: [],
    batch: counters,
  });
  try {
    db.exec(`CREATE TABLE tgt.via_subquery (id INTEGER PRIMARY KEY, loud TEXT); INSERT INTO tgt.via_subquery SELECT * FROM tgt.plain`);
    const sub = compiledFor(db, SUBQUERY);
    const plain = compiledFor(db, PLAIN);
    expect(sub.reads).toBeUndefined();
    expect(plain.reads).toEqual(['id', 'title']);
    // What sync and import do with such a definition: refused before anything runs.
    expect(() => compileAgainstSource(db, parseDefinition(SUBQUERY))).toThrow(InvalidInputError);
    for (const feed of FEEDS) {
      const s = await throughApplier(db, sub, lo, hi, wrote('via_subquery'), feed, () => writes(db));
      expect(s.outcome, `${feed}: the subquery map`).toMatchObject({ kind: 'rows', applied: 4 });
      expect(s.seen, `${feed}: the subquery map's rows written`).toEqual([1, 2, 3]);
      const p = await throughApplier(db, plain, lo, hi, wrote('plain'), feed, () => writes(db));
      // Every event checked (as a transition), none written.
      expect(p.outcome, `${feed}: the plain map`).toMatchObject({ kind: 'rows', applied: 4 });
      expect(p.seen, `${feed}: the plain map's rows written`).toEqual([]);
    }
  } finally {
    db.close();
  }
  // And a title change reaches the plain map.
  const again = await stageBatch(path.join(tmp, 's2.db'), path.join(tmp, 't2.db'), {
    schema: SCHEMA,
    tables: ['issues'],
    projections: [PLAIN],
    before: [],
    batch: [...counters, `UPDATE issues SET title = 'deux' WHERE id = 2`],
  });
  try {
    const plain = compiledFor(again.db, PLAIN);
    for (const feed of FEEDS) {
      const p = await throughApplier(again.db, plain, again.lo, again.hi, '', feed, (o) =>
        again.db.prepare('SELECT loud FROM tgt.plain WHERE id = 2').pluck().get(),
      );
      expect(p.outcome, feed).toMatchObject({ kind: 'rows', applied: 5 });
      expect(p.seen, feed).toBe('DEUX');
    }
  } finally {
    again.db.close();
  }
});
