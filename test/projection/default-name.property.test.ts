// every table name gets a valid default projection name distinct from every other table
import Database from 'better-sqlite3';
import fc from 'fast-check';
import { test, expect, describe } from '../support/fixtures.ts';
import {
  defaultMirror,
  parseDefinition,
  parseStoredDefinition,
  defaultProjectionName,
  checkCollisions,
} from '../../src/projection/index.ts';
import { foldIdent, quoteIdent } from '../../src/sqlite/index.ts';

/*
 * `sluice sync` with no definitions names each mirror after its table. The
 * name must pass the projection-name rule for every name SQLite allows, and
 * two tables that can exist side by side (SQLite folds only ASCII letters:
 * `Foo`/`FOO` cannot, `é`/`É` and `a b`/`a_b` can) must get names that stay
 * distinct under ASCII case folding. A name valid before the escape existed
 * keeps itself, so targets made by earlier versions keep their projections.
 */

/** Strings heavy in what matters: letters of both cases, the escape character, hex digits, non-ASCII case pairs. */
const tricky = fc.string({
  unit: fc.constantFrom('a', 'A', 'f', 'F', '_', '5', '0', ' ', '.', '-', '%', '$', '"', "'", 'é', 'É', 'ß', 'İ', '🔑'),
  maxLength: 12,
});
const anyName = fc.oneof(tricky, fc.string({ unit: 'binary', maxLength: 12 }), fc.string({ unit: 'grapheme-ascii', maxLength: 110 }));

/** The projection-name rule before default names were escaped: such a name must stay its own default. */
const validBefore = (n: string) => n.length <= 100 && /^[A-Za-z0-9][A-Za-z0-9_.-]*$/.test(n);

/** Whether the projection-name rule accepts `n`. */
const isValid = (n: string) => {
  try {
    parseDefinition({ name: n, source: 'x', kind: 'mirror' });
    return true;
  } catch {
    return false;
  }
};

describe('default projection names', () => {
  test('a name that is valid as it is stays the table name', () => {
    for (const t of ['issues', 'Order.Lines', 'a-b', 'x_1', '9lives', 'A'.repeat(100)]) expect(defaultProjectionName(t)).toBe(t);
  });

  test('any other table name is escaped byte by byte after a leading "_"', () => {
    expect(defaultProjectionName('_audit')).toBe('__5faudit');
    expect(defaultProjectionName('my table')).toBe('_my_20table');
    expect(defaultProjectionName('Order$Lines')).toBe('_Order_24Lines');
    expect(defaultProjectionName('naïve')).toBe('_na_c3_afve');
    expect(defaultProjectionName('quo"te')).toBe('_quo_22te');
    expect(defaultProjectionName("it's")).toBe('_it_27s');
    expect(defaultProjectionName('é')).toBe('__c3_a9');
    expect(defaultProjectionName('É')).toBe('__c3_89');
    expect(defaultProjectionName('')).toBe('_');
    expect(defaultProjectionName('A'.repeat(101))).toBe(`_${'A'.repeat(101)}`);
  });

  test('every table name gets a name the projection-name rule accepts, and a name valid before the escape maps to itself', () => {
    fc.assert(
      fc.property(anyName, (t) => {
        const n = defaultProjectionName(t);
        expect(isValid(n), `${JSON.stringify(t)} -> ${JSON.stringify(n)}`).toBe(true);
        if (validBefore(t)) expect(n).toBe(t);
        else expect(n.startsWith('_')).toBe(true);
      }),
      { numRuns: 2000 },
    );
  });

  test('two tables SQLite lets exist side by side never get names equal under ASCII case folding', () => {
    fc.assert(
      fc.property(anyName, anyName, (a, b) => {
        fc.pre(foldIdent(a) !== foldIdent(b));
        expect(foldIdent(defaultProjectionName(a))).not.toBe(foldIdent(defaultProjectionName(b)));
      }),
      { numRuns: 5000 },
    );
  });

  test('tables named like each other but for non-ASCII case, spaces or the escape character all coexist in SQLite and in one target', () => {
    const names = ['é', 'É', 'a b', 'a_b', '_a_62', 'a_62', 'ß', 'SS', 'İ', 'i', '', '_'];
    const db = new Database(':memory:');
    try {
      for (const t of names) db.exec(`CREATE TABLE ${quoteIdent(t)} (id INTEGER PRIMARY KEY)`);
      expect(db.prepare("SELECT count(*) FROM sqlite_schema WHERE type = 'table'").pluck().get()).toBe(names.length);
    } finally {
      db.close();
    }
    const defaults = names.map(defaultMirror);
    expect(new Set(defaults.map((d) => foldIdent(d.name))).size).toBe(names.length);
    expect(() => checkCollisions(defaults.map((d) => ({ name: d.name, tables: [d.source] })))).not.toThrow();
  });

  test('a stored default mirror written before names were escaped is read back as it was stored', () => {
    for (const t of ['_audit', 'my table', 'Order$Lines', 'naïve', 'quo"te', "it's", 'A'.repeat(101)]) {
      const old = { name: t, source: t, kind: 'mirror' };
      expect(parseStoredDefinition(JSON.stringify(old), `stored definition of ${t}`)).toEqual(old);
    }
    // Only exactly what the old default wrote: anything else is checked as usual.
    expect(() => parseStoredDefinition(JSON.stringify({ name: 'my table', source: 'my_table', kind: 'mirror' }), 'x')).toThrow(/name/);
    expect(() => parseStoredDefinition(JSON.stringify({ name: 'my table', source: 'my table', kind: 'mirror', target: 't' }), 'x')).toThrow(
      /name/,
    );
    expect(() =>
      parseStoredDefinition(JSON.stringify({ name: 'my table', source: 'my table', kind: 'map', columns: { id: 'id' } }), 'x'),
    ).toThrow(/name/);
  });
});
