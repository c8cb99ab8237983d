import Database from 'better-sqlite3';
import fc from 'fast-check';
import { test, expect, describe } from '../support/fixtures.ts';
import {
  RawText,
  fromJsonValue,
  jsonValueSchema,
  mayBeLossyText,
  placeholderFor,
  sameRow,
  sameValue,
  storageClass,
  textFromBytes,
  toBindable,
  toJsonValue,
  type SqlValue,
} from '../../src/sqlite/index.ts';
import { InvalidInputError } from '../../src/errors.ts';

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** Any value SQLite can store (NaN cannot be stored: SQLite turns it into NULL). */
const sqlValue: fc.Arbitrary<SqlValue> = fc.oneof(
  fc.constant(null),
  fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
  fc.constantFrom(INT64_MIN, INT64_MAX, 2n ** 53n, -(2n ** 53n), 2n ** 53n - 1n, 0n),
  fc.double({ noNaN: true }),
  fc.constantFrom(0.1 + 0.2, -0, Infinity, -Infinity, 5e-324, Number.MAX_VALUE),
  fc.string({ unit: 'binary' }),
  fc.uint8Array({ maxLength: 64 }).map((b) => textFromBytes(b)),
  fc.uint8Array({ maxLength: 64 }).map((b) => new RawText(Uint8Array.from([0xff, ...b]))),
  fc.uint8Array({ maxLength: 64 }),
);

const viaJson = (v: SqlValue) => fromJsonValue(JSON.parse(JSON.stringify(toJsonValue(v))));

describe('value codec', () => {
  test('every SqlValue survives toJsonValue -> JSON text -> fromJsonValue with its storage class and bytes', () => {
    fc.assert(
      fc.property(sqlValue, (v) => {
        const back = viaJson(v);
        expect(storageClass(back)).toBe(storageClass(v));
        expect(sameValue(back, v)).toBe(true);
        if (typeof v === 'number') expect(Object.is(back, v)).toBe(true); // keeps -0 too
        expect(jsonValueSchema.safeParse(toJsonValue(v)).success).toBe(true);
      }),
      { numRuns: 500 },
    );
  });

  test('the JSON form is plain where unambiguous and tagged where plain JSON would lose the class', () => {
    expect(toJsonValue(null)).toBe(null);
    expect(toJsonValue('text')).toBe('text');
    expect(toJsonValue(2n ** 53n - 1n)).toBe(2 ** 53 - 1);
    expect(toJsonValue(2n ** 53n)).toEqual({ $i: '9007199254740992' });
    expect(toJsonValue(INT64_MIN)).toEqual({ $i: '-9223372036854775808' });
    expect(toJsonValue(1)).toEqual({ $f: 1 }); // REAL 1.0 is not INTEGER 1
    expect(toJsonValue(-0)).toEqual({ $f: '-0' });
    expect(toJsonValue(-Infinity)).toEqual({ $f: '-Infinity' });
    expect(toJsonValue(new Uint8Array())).toEqual({ $b: '' });
    expect(toJsonValue(new RawText(Uint8Array.from([0xff, 0x41])))).toEqual({ $t: '/0E=' });
    expect(fromJsonValue(7)).toBe(7n);
    expect(fromJsonValue({ $f: 7 })).toBe(7);
  });

  test('fromJsonValue refuses what is not the encoding, with InvalidInputError BAD_VALUE', () => {
    for (const bad of [
      1.5,
      2 ** 60,
      { $i: '1.5' },
      { $b: 'not base64!' },
      { $x: 1 },
      { $f: 'NaN' },
      [],
      true,
      undefined,
      { $i: '1', extra: 1 },
    ]) {
      let caught: unknown;
      try {
        fromJsonValue(bad);
      } catch (err) {
        caught = err;
      }
      expect(caught, JSON.stringify(bad)).toBeInstanceOf(InvalidInputError);
      expect((caught as InvalidInputError).code).toBe('BAD_VALUE');
    }
  });

  test('sameValue compares storage class and bytes, never numeric value, collation or decoding', () => {
    const cases: [SqlValue, SqlValue, boolean][] = [
      [1n, 1, false], // INTEGER 1 vs REAL 1.0
      [1n, '1', false],
      ['abc', 'ABC', false],
      ['', new Uint8Array(), false],
      ['', null, false],
      [new Uint8Array(), null, false],
      [null, null, true],
      [INT64_MAX, INT64_MAX, true],
      [INT64_MAX, INT64_MAX - 1n, false],
      [0.1 + 0.2, 0.3, false],
      ['A', new RawText(Uint8Array.from([0x41])), true], // TEXT is compared by its bytes
      [new RawText(Uint8Array.from([0xff, 0x41])), new RawText(Uint8Array.from([0xfe, 0x41])), false],
      [new RawText(Uint8Array.from([0xff, 0x41])), '\uFFFDA', false], // what a lossy decode would produce
      ['A', Uint8Array.from([0x41]), false],
      [Uint8Array.from([1, 2]), Buffer.from([1, 2]), true],
    ];
    for (const [a, b, same] of cases) {
      expect(sameValue(a, b), `${String(a)} vs ${String(b)}`).toBe(same);
      expect(sameValue(b, a)).toBe(same);
    }
    expect(sameRow([1n, 'a'], [1n, 'a'])).toBe(true);
    expect(sameRow([1n, 'a'], [1n])).toBe(false);
    expect(sameRow([1n, 'a'], [1, 'a'])).toBe(false);
  });

  test('sameValue agrees with the SQL test the capture triggers use to skip no-op updates', () => {
    const db = new Database(':memory:');
    db.defaultSafeIntegers(true);
    try {
      const related = sqlValue.chain((a) =>
        fc.tuple(
          fc.constant(a),
          fc.oneof(
            fc.constant(a),
            sqlValue,
            // Same bytes, another class; same number, another class.
            fc.constant(
              typeof a === 'string'
                ? Buffer.from(a)
                : a instanceof Uint8Array
                  ? textFromBytes(a)
                  : typeof a === 'bigint'
                    ? Number(a)
                    : typeof a === 'number' && Number.isSafeInteger(a)
                      ? BigInt(a)
                      : a,
            ),
          ),
        ),
      );
      fc.assert(
        fc.property(related, ([a, b]) => {
          const sql = `SELECT NOT (a IS NOT b COLLATE BINARY OR typeof(a) <> typeof(b)) AS same FROM (SELECT ${placeholderFor(a)} AS a, ${placeholderFor(b)} AS b)`;
          const r = db.prepare(sql).get(toBindable(a), toBindable(b)) as { same: bigint };
          expect(sameValue(a, b)).toBe(r.same === 1n);
        }),
        { numRuns: 500 },
      );
    } finally {
      db.close();
    }
  });

  test('toBindable with placeholderFor stores each value with its exact storage class and bytes', () => {
    const db = new Database(':memory:');
    db.defaultSafeIntegers(true);
    db.exec('CREATE TABLE u (x)');
    try {
      fc.assert(
        fc.property(sqlValue, (v) => {
          db.exec('DELETE FROM u');
          db.prepare(`INSERT INTO u VALUES (${placeholderFor(v)})`).run(toBindable(v));
          const r = db.prepare('SELECT typeof(x) AS t, hex(x) AS h, x FROM u').get() as { t: string; h: string; x: unknown };
          expect(r.t).toBe(storageClass(v));
          if (typeof v === 'number') expect(Object.is(r.x, v) || (Object.is(v, -0) && r.x === 0)).toBe(true);
          else if (v instanceof RawText) expect(r.h).toBe(Buffer.from(v.bytes).toString('hex').toUpperCase());
          else if (typeof v === 'string') expect(r.h).toBe(Buffer.from(v, 'utf8').toString('hex').toUpperCase());
          else if (v instanceof Uint8Array) expect(r.h).toBe(Buffer.from(v).toString('hex').toUpperCase());
          else expect(r.x).toBe(v);
        }),
        { numRuns: 300 },
      );
    } finally {
      db.close();
    }
  });

  test('textFromBytes keeps valid UTF-8 as a string and anything else as RawText with its own copy of the bytes', () => {
    expect(textFromBytes(Buffer.from('héllo 🔑'))).toBe('héllo 🔑');
    const bytes = Uint8Array.from([0xff, 0x41]);
    const raw = textFromBytes(bytes);
    expect(raw).toBeInstanceOf(RawText);
    bytes[0] = 0x41;
    expect(Array.from((raw as RawText).bytes)).toEqual([0xff, 0x41]);
    // A BOM is content, not something to strip.
    expect(textFromBytes(Uint8Array.from([0xef, 0xbb, 0xbf, 0x41]))).toBe('\uFEFFA');
    expect(mayBeLossyText('\uFFFDA')).toBe(true);
    expect(mayBeLossyText('A')).toBe(false);
    expect(mayBeLossyText(Uint8Array.from([0xff]))).toBe(false);
  });
});
