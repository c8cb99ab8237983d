// the compatibility proof covers rows cursor keys and auxiliary state
import { describe, expect, test } from 'vitest';
import {
  compileProjection,
  type CompiledProjection,
  type SourceShape,
  parseDefinition,
  type ProjectionDefinitionInput,
  classifyChange,
  DEFAULT_ORACLE,
  type AlterFacts,
  type AlterStateOracle,
  type StoredProjection,
  STATE_PARTS,
  type StatePart,
  KINDS,
} from '../../../src/projection/index.ts';

/*
 * 003's AlterStateOracle, without a database: classifyChange is pure over
 * the stored projection, the new compiled one and the facts explain reads.
 * A change is Compatible only with a proof of all four state parts, and
 * taking any one proof away makes it not Compatible.
 */

const SHAPE: SourceShape = {
  table: 'items',
  columns: [
    { name: 'id', type: 'INTEGER', collate: 'BINARY' },
    { name: 'name', type: 'TEXT', collate: 'BINARY' },
    { name: 'qty', type: 'INTEGER', collate: 'BINARY' },
  ],
  keyColumns: ['id'],
  withoutRowid: false,
  rowidAlias: true,
};

const compile = (d: ProjectionDefinitionInput, shape = SHAPE): CompiledProjection => compileProjection(parseDefinition(d), shape);

/** The row a target keeps for `d` after a build against `shape`. */
function stored(d: ProjectionDefinitionInput, shape = SHAPE): StoredProjection {
  const p = compile(d, shape);
  const { handler: _h, ...data } = p.definition as { handler?: unknown };
  return {
    name: p.name,
    kind: p.kind,
    targetTable: p.targetTable,
    definition: JSON.stringify(data),
    sourceShape: JSON.stringify(shape),
    fingerprint: p.fingerprint,
    cursor: 'a stored cursor',
  };
}

const handler = (version: string) => ({ version, apply: () => undefined });
const CONTINUES: AlterFacts = { cursor: { continues: true } };
const map: ProjectionDefinitionInput = {
  name: 'cheap',
  source: 'items',
  kind: 'map',
  columns: { id: 'id', label: 'name' },
  filter: 'qty < 100',
};
const fts: ProjectionDefinitionInput = { name: 'search', source: 'items', kind: 'fts5', columns: ['name'] };
const custom: ProjectionDefinitionInput = { name: 'log', source: 'items', kind: 'custom', handler: handler('1') };

/** Each change sluice proves Compatible, of each kind that can have it. */
const COMPATIBLE: readonly { what: string; old: StoredProjection; next: CompiledProjection; facts: AlterFacts }[] = [
  {
    what: 'a mirror unchanged',
    old: stored({ name: 'items', source: 'items', kind: 'mirror' }),
    next: compile({ name: 'items', source: 'items', kind: 'mirror' }),
    facts: CONTINUES,
  },
  { what: 'an fts5 index unchanged', old: stored(fts), next: compile(fts), facts: CONTINUES },
  { what: 'a custom projection unchanged', old: stored(custom), next: compile(custom), facts: CONTINUES },
  {
    what: 'a mirror written with its default target spelled out',
    old: stored({ name: 'items', source: 'items', kind: 'mirror' }),
    next: compile({ name: 'items', source: 'items', kind: 'mirror', target: 'items' }),
    facts: CONTINUES,
  },
  {
    what: 'a map renamed, its target table unchanged',
    old: stored({ ...map, target: 'cheap' }),
    next: compile({ ...map, name: 'cheap-items', target: 'cheap' }),
    facts: CONTINUES,
  },
  {
    what: 'an fts5 index renamed, its target table unchanged',
    old: stored({ ...fts, target: 'fts' }),
    next: compile({ ...fts, name: 'find', target: 'fts' }),
    facts: CONTINUES,
  },
  {
    what: 'a map filter loosened for rows that do not exist (counted: none differ)',
    old: stored(map),
    next: compile({ ...map, filter: 'qty < 1000' }),
    facts: { ...CONTINUES, filterDisagreements: 0 },
  },
  {
    what: 'a non-UNIQUE index a user added to an fts5 key table',
    old: stored(fts),
    next: compile(fts),
    facts: { ...CONTINUES, targetIndexes: [{ name: 'by_key', table: 'search_src', unique: false }] },
  },
];

/** The default oracle with `part`'s proof taken out of every change's proof. */
function without(part: StatePart): AlterStateOracle {
  return {
    prove(change, ctx) {
      const { [part]: _gone, ...rest } = DEFAULT_ORACLE.prove(change, ctx);
      return rest;
    },
  };
}

describe('the compatibility proof', () => {
  test('test_alter_query_proves_materialized_result_frontier_row_identity_auxiliary_state: the compatibility proof covers rows, cursor, keys and auxiliary state', () => {
    for (const c of COMPATIBLE) {
      const d = classifyChange(c.old, c.next, c.facts);
      expect([d.classification, d.affected], c.what).toEqual(['Compatible', []]);
      for (const change of d.changes)
        for (const part of STATE_PARTS) {
          expect(change.proof[part]?.holds, `${c.what}: ${part}`).toBe(true);
          expect(change.proof[part]?.why.length, `${c.what}: ${part} says why`).toBeGreaterThan(0);
        }
    }
  });

  test('removing any one proof makes each compatible change not Compatible', () => {
    for (const c of COMPATIBLE)
      for (const part of STATE_PARTS) {
        const d = classifyChange(c.old, c.next, c.facts, { oracle: without(part) });
        expect(d.classification, `${c.what} without a proof of ${part}`).not.toBe('Compatible');
        expect(d.affected, `${c.what} without a proof of ${part}`).toContain(part);
      }
  });

  test('each state part fails on its own change: rows, cursor, keys, auxiliary', () => {
    // Rows: a map filter whose rows were not counted, or that select other rows.
    expect(classifyChange(stored(map), compile({ ...map, filter: 'qty < 5' }), CONTINUES).affected).toEqual(['rows']);
    expect(classifyChange(stored(map), compile({ ...map, filter: 'qty < 5' }), { ...CONTINUES, filterDisagreements: 2 }).affected).toEqual([
      'rows',
    ]);
    // Cursor: unchanged, but the stored cursor does not continue.
    const rearmed = { cursor: { continues: false, reason: 'TABLE_REARMED', message: 're-armed', rebuildable: true } } as const;
    const d = classifyChange(stored(map), compile(map), rearmed);
    expect([d.classification, d.reason, d.affected]).toEqual(['Rebuildable', 'ALTER_CURSOR_INVALID', ['cursor']]);
    // Keys: the source's primary key moved to another column.
    const byName: SourceShape = { ...SHAPE, keyColumns: ['name'], rowidAlias: false };
    const mirror: ProjectionDefinitionInput = { name: 'items', source: 'items', kind: 'mirror' };
    expect(classifyChange(stored(mirror), compile(mirror, byName), CONTINUES).affected).toEqual(['rows', 'cursor', 'keys']);
    // Auxiliary: an fts5 tokenizer changed; a custom handler's version changed.
    expect(classifyChange(stored(fts), compile({ ...fts, tokenize: 'porter' }), CONTINUES).affected).toEqual(['auxiliary']);
    const h = classifyChange(stored(custom), compile({ ...custom, handler: handler('2') }), CONTINUES);
    expect([h.classification, h.reason, h.affected]).toEqual(['Rejected', 'ALTER_CUSTOM_NO_SHADOW', ['auxiliary']]);
  });

  test("a source column the projection does not read proves rows, keys and auxiliary state, and the cursor only where sync's own cursor check passes (DDL through sluice alter)", () => {
    const wider: SourceShape = { ...SHAPE, columns: [...SHAPE.columns, { name: 'colour', type: 'TEXT', collate: 'BINARY' }] };
    const stopped = {
      cursor: { continues: false, reason: 'SCHEMA_CHANGED', message: 'DDL sluice did not record', rebuildable: true },
    } as const;
    for (const def of [map, fts]) {
      const d = classifyChange(stored(def), compile(def, wider), CONTINUES);
      expect([d.classification, d.reason, d.affected]).toEqual(['Compatible', 'ALTER_SOURCE_COLUMN_ADDED', []]);
      expect(d.changes[0]?.proof.cursor?.why).toContain('sluice alter');
      const e = classifyChange(stored(def), compile(def, wider), stopped);
      expect([e.classification, e.reason, e.affected]).toEqual(['Rebuildable', 'ALTER_SOURCE_COLUMN_ADDED', ['cursor']]);
    }
    // A mirror must carry the new column: its rows change too.
    const mirror: ProjectionDefinitionInput = { name: 'items', source: 'items', kind: 'mirror' };
    expect(classifyChange(stored(mirror), compile(mirror, wider), CONTINUES).affected).toEqual(['rows']);
    expect(classifyChange(stored(mirror), compile(mirror, wider), stopped).affected).toEqual(['rows', 'cursor']);
  });

  test('a rebuild that would not fit on the disk, or that needs a shadow a custom handler cannot have, is Rejected', () => {
    const tight = { ...CONTINUES, space: { neededBytes: 2_000_000, freeBytes: 1_000 } };
    const d = classifyChange(stored(fts), compile({ ...fts, tokenize: 'porter' }), tight);
    expect([d.classification, d.reason]).toEqual(['Rejected', 'ALTER_NO_SPACE']);
    expect(d.changes[0]?.why).toContain('2000000 bytes');
    // The same change with room is Rebuildable; a Compatible one needs no room at all.
    expect(classifyChange(stored(fts), compile({ ...fts, tokenize: 'porter' }), CONTINUES).classification).toBe('Rebuildable');
    expect(classifyChange(stored(fts), compile(fts), tight).classification).toBe('Compatible');
    expect(KINDS.custom.alter.shadow({ ownedTables: [] }).holds).toBe(false);
    expect(KINDS.custom.alter.shadow({ ownedTables: ['ops'] }).holds).toBe(true);
  });

  test('a key no longer unique or missing, and a column that does not exist, are Rejected', () => {
    const missing = {
      name: 'cheap',
      definition: parseDefinition({ ...map, columns: { label: 'name' } }),
      source: SHAPE,
      error: { code: 'MISSING_KEY', message: 'no key' },
    };
    expect(classifyChange(stored(map), missing, CONTINUES).reason).toBe('ALTER_KEY_MISSING');
    const collation = { ...missing, error: { code: 'KEY_COLLATION_MISMATCH', message: 'two rows, one key' } };
    expect(classifyChange(stored(map), collation, CONTINUES).reason).toBe('ALTER_KEY_NOT_UNIQUE');
    const unknown = { ...missing, error: { code: 'UNKNOWN_COLUMN', message: 'no column title' } };
    const d = classifyChange(stored(map), unknown, CONTINUES);
    expect([d.classification, d.reason, d.fingerprints.new]).toEqual(['Rejected', 'ALTER_UNKNOWN_COLUMN', null]);
  });
});
