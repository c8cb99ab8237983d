// every value case reaches the target byte for byte by snapshot and by incremental apply
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { Syncer } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import type { ProjectionDefinitionInput } from '../../../src/projection/index.ts';
import { fileTableCells, makeSource, tableCells, type Cell } from '../support/target.ts';

/*
 * The value cases of the capture issue, through the snapshot path (rows that
 * exist before the first sync) and the incremental path (inserts, updates
 * that move a value to another storage class, key changes), into a mirror and
 * into a map of plain copies. Compared as storage class and bytes.
 */

const SCHEMA = `
CREATE TABLE vals (id INTEGER PRIMARY KEY, v, t TEXT COLLATE NOCASE, r REAL, i INTEGER, b BLOB);
CREATE TABLE ukeys (k PRIMARY KEY, note) WITHOUT ROWID;
CREATE TABLE tkeys (k TEXT COLLATE NOCASE PRIMARY KEY, v) WITHOUT ROWID;
`;

// SQL literals, with what they must be stored as in the untyped column v.
const VALUES: readonly (readonly [string, string])[] = [
  ['9223372036854775807', 'integer'],
  ['-9223372036854775808', 'integer'],
  ['1', 'integer'],
  ['1.0', 'real'],
  ["'1'", 'text'],
  ['0.30000000000000004', 'real'],
  ['1.0 / 3', 'real'],
  ['4.9406564584124654e-324', 'real'],
  ['1.7976931348623157e308', 'real'],
  ['123456789.12345679', 'real'],
  ["CAST(x'ff41' AS TEXT)", 'text'],
  ["CAST(x'eda080c0' AS TEXT)", 'text'],
  ["CAST(x'610062' AS TEXT)", 'text'],
  ["''", 'text'],
  ["x''", 'blob'],
  ['NULL', 'null'],
  ["x'00ff'", 'blob'],
];

// NOCASE text, REAL and INTEGER affinity columns, next to v.
const TEXTS = ["'abc'", "'ABC'", "'Straße'", "CAST(x'c3' AS TEXT)", "''", 'NULL'];
const REALS = ['3', '0.1', '-1e-300', 'NULL', '2.5'];
const INTS = ["'007'", "'abc'", '1.0', '1.5', '-9223372036854775808'];

const MEGABYTE = Buffer.from(Array.from({ length: 1 << 20 }, (_, i) => (i * 2654435761) >>> 24));

const PROJECTIONS: ProjectionDefinitionInput[] = [
  { name: 'vals', source: 'vals', kind: 'mirror' },
  { name: 'ukeys', source: 'ukeys', kind: 'mirror' },
  { name: 'tkeys', source: 'tkeys', kind: 'mirror' },
  { name: 'vals_copy', source: 'vals', kind: 'map', columns: { id: 'id', v: 'v', t: 't', r: 'r', i: 'i', b: 'b' } },
];

function rowSql(id: number, k: number): string {
  const at = <T>(xs: readonly T[]) => xs[k % xs.length] as T;
  return `(${id}, ${at(VALUES)[0]}, ${at(TEXTS)}, ${at(REALS)}, ${at(INTS)}, ${k % 3 === 0 ? "x''" : k % 3 === 1 ? 'NULL' : "x'01'"})`;
}

describe('every value case reaches the target byte for byte', () => {
  test('through the snapshot and through incremental inserts, storage-class changes and key changes', async ({ makeDb, tmp }) => {
    const seed = [
      `INSERT INTO vals VALUES ${VALUES.map((_, k) => rowSql(k + 1, k)).join(', ')};`,
      "INSERT INTO ukeys VALUES (1, 'int'), ('1', 'text'), (2.5, 'real'), (x'01', 'blob'), (9223372036854775807, 'max');",
      "INSERT INTO tkeys VALUES ('abc', 1), (CAST(x'ff41' AS TEXT), 2), ('Straße', 3), ('', 4);",
    ].join('\n');
    const src = makeSource(makeDb, SCHEMA, ['vals', 'ukeys', 'tkeys'], { seed });
    src.db.prepare('INSERT INTO vals (id, b) VALUES (100, ?)').run(MEGABYTE);
    // The storage classes are the ones under test (a sanity check of the fixture itself).
    expect(src.db.prepare('SELECT typeof(v) FROM vals WHERE id <= ? ORDER BY id').pluck().all(VALUES.length)).toEqual(
      VALUES.map(([, cls]) => cls),
    );

    const target = path.join(tmp, 'target.db');
    const s = await Syncer.open(src.file, target, { projections: PROJECTIONS });
    const expectSame = (phase: string) => {
      for (const t of ['vals', 'ukeys', 'tkeys'])
        expect(tableCells(s.session.db, 'tgt', t), `${phase}: ${t}`).toEqual(tableCells(src.db, 'main', t));
      expect(tableCells(s.session.db, 'tgt', 'vals_copy'), `${phase}: vals_copy`).toEqual(tableCells(src.db, 'main', 'vals'));
    };
    try {
      const first = await s.runOnce();
      expect(first.projections.map((p) => [p.name, p.state, p.snapshotRows])).toEqual([
        ['vals', 'active', VALUES.length + 1],
        ['ukeys', 'active', 5],
        ['tkeys', 'active', 4],
        ['vals_copy', 'active', VALUES.length + 1],
      ]);
      expectSame('snapshot');

      // Incremental: the same values as new rows, every value moved to the next case, case-only and byte-only changes.
      src.db.exec(`INSERT INTO vals VALUES ${VALUES.map((_, k) => rowSql(k + 1001, k)).join(', ')}`);
      for (let k = 0; k < VALUES.length; k++)
        src.db.exec(
          `UPDATE vals SET v = ${(VALUES[(k + 1) % VALUES.length] as readonly [string, string])[0]}, t = ${TEXTS[(k + 1) % TEXTS.length]}, r = ${REALS[(k + 2) % REALS.length]}, i = ${INTS[(k + 3) % INTS.length]} WHERE id = ${k + 1}`,
        );
      src.db.exec("UPDATE vals SET t = 'ABC' WHERE t = 'abc' COLLATE BINARY");
      const changed = Buffer.from(MEGABYTE);
      changed[512 * 1024] = (changed[512 * 1024] as number) ^ 0xff;
      src.db.prepare('UPDATE vals SET b = ? WHERE id = 100').run(changed);
      src.db.prepare('INSERT INTO vals (id, b) VALUES (101, ?)').run(MEGABYTE);
      // Key changes that only the storage class or the bytes tell apart.
      src.db.exec("UPDATE ukeys SET k = 1.0 WHERE k = 1 AND typeof(k) = 'integer'");
      src.db.exec("UPDATE ukeys SET k = CAST(x'01' AS TEXT) WHERE k = x'01'");
      src.db.exec("UPDATE tkeys SET k = 'ABC' WHERE k = 'abc'");
      src.db.exec("UPDATE tkeys SET k = CAST(x'fe41' AS TEXT) WHERE k = CAST(x'ff41' AS TEXT)");
      src.db.exec("UPDATE tkeys SET k = 'STRASSE' WHERE k = 'Straße'");
      src.db.exec("INSERT INTO tkeys VALUES ('Straße', x'')");

      const second = await s.runOnce();
      expect(second.projections.map((p) => [p.name, p.state, p.reason])).toEqual(PROJECTIONS.map((p) => [p.name, 'active', undefined]));
      expectSame('incremental');
      // The changes were real changes to the target (not no-ops that happened to match).
      expect(s.session.db.prepare("SELECT typeof(k) FROM tgt.ukeys WHERE note = 'int'").pluck().get()).toBe('real');
      expect(s.session.db.prepare('SELECT hex(k) FROM tgt.tkeys WHERE v = 2').pluck().get()).toBe('FE41');
    } finally {
      s.close();
    }
    expect((await verify(src.file, target)).ok).toBe(true);

    // A fresh snapshot of the final source is the same as the incrementally kept target.
    const fresh = path.join(tmp, 'fresh.db');
    const again = await Syncer.open(src.file, fresh, { projections: PROJECTIONS });
    try {
      await again.runOnce();
    } finally {
      again.close();
    }
    for (const t of ['vals', 'ukeys', 'tkeys', 'vals_copy'])
      expect(fileTableCells(fresh, t) as Cell[][], t).toEqual(fileTableCells(target, t));
  });
});
