// what a projection reads is what SQLite compiles its SQL to read: the columns named, with the key, or every column
import { test, expect } from '../support/fixtures.ts';
import { compileProjection, type SourceShape, parseDefinition, type ProjectionDefinitionInput } from '../../src/projection/index.ts';
import { InvalidInputError } from '../../src/errors.ts';

const SHAPE: SourceShape = {
  table: 'issues',
  columns: [
    { name: 'id', type: 'INTEGER', collate: 'BINARY' },
    { name: 'title', type: 'TEXT', collate: 'NOCASE' },
    { name: 'body', type: 'TEXT', collate: 'BINARY' },
    { name: 'state', type: 'TEXT', collate: 'BINARY' },
    { name: 'comment_count', type: 'INTEGER', collate: 'BINARY' },
    { name: 'Data', type: '', collate: 'BINARY' },
  ],
  keyColumns: ['id'],
  withoutRowid: false,
  rowidAlias: true,
};

const readsOf = (def: Record<string, unknown>) =>
  compileProjection(parseDefinition({ name: 'p', source: 'issues', ...def } as ProjectionDefinitionInput), SHAPE).reads;

test('a mirror reads every column', () => {
  expect(readsOf({ kind: 'mirror' })).toBeUndefined();
});

test('an fts5 index reads its columns and the key', () => {
  expect(readsOf({ kind: 'fts5', columns: ['title', 'body'] })).toEqual(['id', 'title', 'body']);
  expect(readsOf({ kind: 'fts5', columns: ['BODY'] })).toEqual(['id', 'body']);
});

test('a map reads what its copies, expressions and filter compile to read, never what their text seems to name', () => {
  expect(readsOf({ kind: 'map', columns: { id: 'id', t: 'title' } })).toEqual(['id', 'title']);
  expect(readsOf({ kind: 'map', columns: { id: 'id', n: { expr: 'length(body)' } }, filter: "state = 'open'" })).toEqual([
    'id',
    'body',
    'state',
  ]);
  // The text names comment_count only inside a string; "data" is the column Data (names fold as SQLite folds them).
  expect(readsOf({ kind: 'map', columns: { id: 'id', x: { expr: "'comment_count' || data" } } })).toEqual(['id', 'Data']);
  // An IN list is the statement's own ephemeral table, not another table.
  expect(readsOf({ kind: 'map', columns: { id: 'id' }, filter: "state IN ('open', 'closed')" })).toEqual(['id', 'state']);
  expect(readsOf({ kind: 'map', columns: { id: 'id', c: { expr: 'coalesce(title, body)', type: 'TEXT' } } })).toEqual([
    'id',
    'title',
    'body',
  ]);
});

test('a map expression with a subquery or a non-deterministic function reads every column', () => {
  // Each through a subquery reading columns of the row itself, or none.
  expect(readsOf({ kind: 'map', columns: { id: 'id', t: { expr: '(SELECT upper(title))' } } })).toBeUndefined();
  expect(readsOf({ kind: 'map', columns: { id: 'id', t: { expr: '(SELECT 1)' } } })).toBeUndefined();
  expect(readsOf({ kind: 'map', columns: { id: 'id' }, filter: 'EXISTS (SELECT 1 FROM issues i WHERE i.id = id)' })).toBeUndefined();
  expect(readsOf({ kind: 'map', columns: { id: 'id', t: { expr: 'title IN (SELECT title FROM labels)' } } })).toBeUndefined();
  expect(readsOf({ kind: 'map', columns: { id: 'id', r: { expr: 'random()' } } })).toBeUndefined();
  expect(readsOf({ kind: 'map', columns: { id: 'id', r: { expr: "datetime('now')" } } })).toBeUndefined();
  expect(readsOf({ kind: 'map', columns: { id: 'id', r: { expr: 'changes()' } } })).toBeUndefined();
  // A function SQLite does not have (or only the user's connection has) cannot be judged.
  expect(readsOf({ kind: 'map', columns: { id: 'id', r: { expr: 'my_slug(title)' } } })).toBeUndefined();
  // The rowid is not a column of the images.
  expect(readsOf({ kind: 'map', columns: { id: 'id', r: { expr: 'rowid' } } })).toBeUndefined();
});

test('a custom handler reads what it declares, with the key, or every column; an unknown name is refused', () => {
  const handler = { apply: () => {} };
  expect(readsOf({ kind: 'custom', handler })).toBeUndefined();
  expect(readsOf({ kind: 'custom', handler, reads: ['Title', 'state'] })).toEqual(['id', 'title', 'state']);
  expect(readsOf({ kind: 'custom', handler, reads: [] })).toEqual(['id']);
  expect(() => readsOf({ kind: 'custom', handler, reads: ['titel'] })).toThrow(InvalidInputError);
  expect(() => readsOf({ kind: 'custom', handler, reads: ['titel'] })).toThrow(/p: source table issues has no column titel/);
});
