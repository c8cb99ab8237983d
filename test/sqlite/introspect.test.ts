import { test, expect, describe } from '../support/fixtures.ts';
import { describeTable, findObjects, foreignKeys, listTables, schemaFingerprint } from '../../src/sqlite/index.ts';

describe('schema introspection', () => {
  test('key columns come in key order, and only a plain INTEGER PRIMARY KEY counts as the rowid alias', ({ makeDb }) => {
    const { db } = makeDb(
      'i.db',
      `CREATE TABLE ipk (id INTEGER PRIMARY KEY, v);
       CREATE TABLE intpk (id INT PRIMARY KEY, v);
       CREATE TABLE desc_ipk (id INTEGER PRIMARY KEY DESC, v);
       CREATE TABLE comp (a, b NOT NULL, c, PRIMARY KEY (c, a));
       CREATE TABLE wr (a TEXT, b INTEGER, PRIMARY KEY (b, a)) WITHOUT ROWID;
       CREATE TABLE st (id INTEGER PRIMARY KEY, v TEXT) STRICT;
       CREATE TABLE gen (id INTEGER PRIMARY KEY, a, b AS (a * 2), c AS (a * 3) STORED);
       CREATE TABLE nokey (a, b);`,
    );
    const d = (n: string) => {
      const t = describeTable(db, n);
      if (t === undefined) throw new Error(`no ${n}`);
      return { key: t.keyColumns, alias: t.rowidAlias, wr: t.withoutRowid, strict: t.strict };
    };
    expect(d('ipk')).toEqual({ key: ['id'], alias: true, wr: false, strict: false });
    expect(d('intpk')).toEqual({ key: ['id'], alias: false, wr: false, strict: false });
    expect(d('desc_ipk')).toEqual({ key: ['id'], alias: false, wr: false, strict: false });
    expect(d('comp')).toEqual({ key: ['c', 'a'], alias: false, wr: false, strict: false });
    expect(d('wr')).toEqual({ key: ['b', 'a'], alias: false, wr: true, strict: false });
    expect(d('st')).toEqual({ key: ['id'], alias: true, wr: false, strict: true });
    expect(d('nokey')).toEqual({ key: [], alias: false, wr: false, strict: false });
    // Generated columns are reported (virtual = 2, stored = 3) so images can include them.
    expect(describeTable(db, 'gen')?.columns.map((c) => [c.name, c.hidden])).toEqual([
      ['id', 0],
      ['a', 0],
      ['b', 2],
      ['c', 3],
    ]);
    expect(describeTable(db, 'missing')).toBeUndefined();
  });

  test('a TEMP table of the same name does not change what is read about the main table', ({ makeDb }) => {
    const { db } = makeDb(
      'i.db',
      'CREATE TABLE t (id INTEGER PRIMARY KEY, p REFERENCES parent (id) ON UPDATE CASCADE); CREATE TABLE parent (id INTEGER PRIMARY KEY);',
    );
    const before = { info: describeTable(db, 't'), fks: foreignKeys(db, 't') };
    db.exec('CREATE TEMP TABLE t (zz TEXT, yy BLOB, PRIMARY KEY (yy))');
    expect(describeTable(db, 't')).toEqual(before.info);
    expect(describeTable(db, 't')?.columns.map((c) => c.name)).toEqual(['id', 'p']);
    expect(foreignKeys(db, 't')).toEqual(before.fks);
    expect(foreignKeys(db, 't')).toMatchObject([{ table: 'parent', from: 'p', to: 'id', onUpdate: 'CASCADE' }]);
    expect(
      findObjects(db, 't')
        .map((o) => o.schema)
        .sort(),
    ).toEqual(['main', 'temp']);
  });

  test('a TEMP table named like a pragma cannot stand in for the pragma function', ({ makeDb }) => {
    const { db } = makeDb('i.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    db.exec(
      "CREATE TEMP TABLE pragma_table_xinfo (name, type, \"notnull\", dflt_value, pk, hidden); INSERT INTO temp.pragma_table_xinfo VALUES ('fake', 'TEXT', 0, NULL, 1, 0);",
    );
    expect(describeTable(db, 't')?.columns.map((c) => c.name)).toEqual(['id', 'v']);
  });

  test('a main table named like a pragma makes introspection fail loudly instead of reading it', ({ makeDb }) => {
    const { db } = makeDb(
      'i.db',
      'CREATE TABLE t (id INTEGER PRIMARY KEY, v); CREATE TABLE pragma_foreign_key_list ("table", "from", "to"); INSERT INTO pragma_foreign_key_list VALUES (\'x\', \'y\', \'z\');',
    );
    expect(() => foreignKeys(db, 't')).toThrow(/not a function/);
  });

  test('listTables lists ordinary main tables only', ({ makeDb }) => {
    const { db } = makeDb(
      'i.db',
      `CREATE TABLE a (id INTEGER PRIMARY KEY AUTOINCREMENT);
       CREATE VIEW v AS SELECT 1;
       CREATE VIRTUAL TABLE f USING fts5(x);
       CREATE TABLE "b c" (id INTEGER PRIMARY KEY);`,
    );
    db.exec('CREATE TEMP TABLE tmp (x)');
    expect(listTables(db).sort()).toEqual(['a', 'b c']);
  });

  test('the schema fingerprint changes with ADD COLUMN and with a changed declared type, and not otherwise', ({ makeDb }) => {
    const { db } = makeDb('i.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)');
    const fp = () => schemaFingerprint(describeTable(db, 't') as NonNullable<ReturnType<typeof describeTable>>);
    const first = fp();
    db.exec("INSERT INTO t VALUES (1, 'x'); CREATE INDEX t_v ON t (v);");
    expect(fp()).toBe(first);
    db.exec('ALTER TABLE t ADD COLUMN w');
    const second = fp();
    expect(second).not.toBe(first);
    db.exec('DROP TABLE t; CREATE TABLE t (id INTEGER PRIMARY KEY, v BLOB, w)');
    expect(fp()).not.toBe(second);
  });
});
