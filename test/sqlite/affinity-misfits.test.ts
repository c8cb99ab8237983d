// which values a column holds that its declared type would store in another class: SQLite's own rule
import { test, expect } from '../support/fixtures.ts';
import { affinityMisfits, type Db } from '../../src/sqlite/index.ts';

/*
 * affinityMisfits asks SQLite which values convert (it writes the ones that
 * may into a TEMP table of that affinity), so its answer is SQLite's rule,
 * whatever the text a number is read from: checked here against the class
 * each value takes when it is written into a column of that declaration.
 */

const TEXTS = [
  '1.0',
  ' 1',
  '1e2',
  '0x10',
  '1_000',
  '9223372036854775808',
  '1.5',
  '+1',
  '-0',
  '.5',
  '5.',
  'Inf',
  '1e999',
  '1 ',
  '\t2\n',
  '1e',
  'e1',
  '--1',
  '1.2.3',
  '12abc',
  '-0.0',
  '0e0',
  '00012',
  '2024-01-01',
  'x',
  '',
];
const NUMBERS: unknown[] = [1n, -5n, 1.5, 2.0, -0.0, 1e17, 2 ** 53, 9.2e18, 1e300];

function redeclared(db: Db, type: string, values: readonly unknown[]): void {
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
  const ins = db.prepare('INSERT INTO t (v) VALUES (?)');
  for (const v of values) ins.run(v);
  const sv = db.pragma('schema_version', { simple: true }) as bigint;
  db.unsafeMode(true);
  db.pragma('writable_schema = ON');
  db.prepare("UPDATE sqlite_schema SET sql = ? WHERE name = 't'").run(`CREATE TABLE t (id INTEGER PRIMARY KEY, v ${type})`);
  db.pragma(`schema_version = ${Number(sv) + 1}`);
  db.pragma('writable_schema = OFF');
  db.unsafeMode(false);
}

test.for(['INTEGER', 'NUMERIC', 'REAL', 'TEXT', 'BLOB'])(
  'a column declared %s in place: exactly the values a write into such a column stores in another class',
  (type, { makeDb }) => {
    const values = [...TEXTS, ...NUMBERS, null, Buffer.from('01', 'hex')];
    const { db } = makeDb('a.db');
    redeclared(db, type, values);
    // What SQLite does with each value written into a column of that declaration.
    db.exec(`CREATE TABLE probe (id INTEGER PRIMARY KEY, v ${type}); INSERT INTO probe SELECT id, v FROM t WHERE 1`);
    const expected = db
      .prepare('SELECT t.id FROM t JOIN probe p USING (id) WHERE typeof(t.v) <> typeof(p.v) ORDER BY t.id')
      .pluck()
      .all() as bigint[];
    const found = affinityMisfits(db, 'main', 't', [{ name: 'v', type }], ['id']);
    // Every declaration but BLOB's converts some of them.
    expect(expected.length === 0).toBe(type === 'BLOB');
    if (expected.length === 0) {
      expect(found).toEqual([]);
      return;
    }
    expect(found).toHaveLength(1);
    expect(found[0]).toMatchObject({ column: 'v', count: expected.length, key: [Number(expected[0])] });
    // Nothing of the TEMP table it used is left.
    expect(db.prepare("SELECT count(*) FROM temp.sqlite_schema WHERE name = '_sluice_affinity'").pluck().get()).toBe(0n);
  },
);
