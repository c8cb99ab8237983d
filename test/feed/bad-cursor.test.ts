// a corrupt truncated or foreign cursor gets a clear error
import { createHash } from 'node:crypto';
import { test, expect, describe, runCli } from '../support/fixtures.ts';
import type { Db } from '../../src/sqlite/index.ts';
import { enable, bump } from '../../src/capture/index.ts';
import {
  snapshot,
  readBatch,
  changedSince,
  acknowledge,
  decodeCursor,
  encodeCursor,
  parseCursor,
  validateCursor,
} from '../../src/feed/index.ts';
import fc from 'fast-check';
import { InvalidInputError } from '../../src/errors.ts';

function withCheck(body: string): string {
  return `${body}.${createHash('sha256').update(body).digest('hex').slice(0, 8)}`;
}

function setup(makeDb: (name?: string, schema?: string) => { db: Db; file: string }) {
  const { db, file } = makeDb('a.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
  enable(db, ['t']);
  db.prepare('INSERT INTO t VALUES (1, 2)').run();
  const cursor = snapshot(db, ['t'], { onRow: () => {} }).cursor;
  return { db, file, cursor };
}

/** Tokens that are not sluice cursors, each for a different reason. */
function badTokens(good: string): Record<string, string> {
  const [head, payload, sum] = good.split('.') as [string, string, string];
  const flipped = payload.slice(0, 5) + (payload[5] === 'A' ? 'B' : 'A') + payload.slice(6);
  return {
    garbage: 'garbage',
    empty: '',
    'truncated by one character': good.slice(0, -1),
    'truncated payload': `${head}.${payload.slice(0, payload.length - 4)}.${sum}`,
    'an edited payload': `${head}.${flipped}.${sum}`,
    'a chronicle version number': '1234',
    'a JWT': 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl',
    'valid check, payload not JSON': withCheck(`sluice2.${Buffer.from('not json').toString('base64url')}`),
    'valid check, wrong fields': withCheck(`sluice2.${Buffer.from(JSON.stringify({ s: 'x', g: -1 })).toString('base64url')}`),
    'valid check, extra fields': withCheck(
      `sluice2.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload, 'base64url').toString()), evil: 1 })).toString('base64url')}`,
    ),
    'a very long token': `sluice1.${'A'.repeat(10_000)}.deadbeef`,
    'binary junk': '\u0000\uFFFD\u{1F600}sluice1..',
  };
}

describe('a cursor string that is not a sluice cursor', () => {
  test('decodeCursor throws InvalidInputError CURSOR_MALFORMED with a one-line message for every kind of bad token', ({ makeDb }) => {
    const { cursor } = setup(makeDb);
    for (const [why, token] of Object.entries(badTokens(cursor))) {
      let err: unknown;
      try {
        decodeCursor(token);
      } catch (e) {
        err = e;
      }
      expect(err, why).toBeInstanceOf(InvalidInputError);
      expect((err as InvalidInputError).code, why).toBe('CURSOR_MALFORMED');
      const message = (err as Error).message;
      expect(message, why).not.toContain('\n');
      expect(message.length, why).toBeLessThan(400);
      expect(message, why).toMatch(/not a valid sluice cursor/);
    }
  });

  test('validateCursor answers error CURSOR_MALFORMED; readBatch and acknowledge throw InvalidInputError; changedSince says changed and why', ({
    makeDb,
  }) => {
    const { db, cursor } = setup(makeDb);
    for (const [why, token] of Object.entries(badTokens(cursor))) {
      const v = validateCursor(db, token);
      expect(v.status, why).toBe('error');
      expect(v.status === 'error' ? v.reason : undefined, why).toBe('CURSOR_MALFORMED');
      expect(() => readBatch(db, token), why).toThrow(InvalidInputError);
      expect(() => readBatch(db, token), why).toThrow(expect.objectContaining({ code: 'CURSOR_MALFORMED', exitCode: 1 }));
      expect(() => acknowledge(db, 'c', token), why).toThrow(expect.objectContaining({ code: 'CURSOR_MALFORMED' }));
      expect(changedSince(db, token), why).toEqual({ changed: true, rebuild: 'CURSOR_MALFORMED' });
    }
  });

  test('a good cursor with surrounding whitespace (a pasted line) still decodes', ({ makeDb }) => {
    const { db, cursor } = setup(makeDb);
    expect(validateCursor(db, `  ${cursor}\n`).status).toBe('ok');
  });

  test('a well-formed cursor of another database is a rebuild (SOURCE_CHANGED), not an error', ({ makeDb }) => {
    const { cursor } = setup(makeDb);
    const { db: other } = makeDb('b.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v)');
    enable(other, ['t']);
    const v = validateCursor(other, cursor);
    expect(v.status === 'rebuild' ? v.reason : v.status).toBe('SOURCE_CHANGED');
  });
});

describe('the changes CLI with a bad cursor', () => {
  test('a garbage --since exits 1 with one line on stderr and no stack trace', ({ makeDb }) => {
    const { file, db } = setup(makeDb);
    db.close();
    // One token through the real CLI; every kind of bad token is covered through the library above.
    for (const since of ['sluice1.eyJzIjoi.00000000']) {
      const r = runCli(['changes', file, '--since', since]);
      expect(r.status).toBe(1);
      expect(r.stdout).toBe('');
      const lines = r.stderr.trimEnd().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^sluice: CURSOR_MALFORMED: /);
      expect(r.stderr).not.toMatch(/\n\s+at /);
    }
  });

  test('a cursor that must rebuild exits 3 with its reason code on stderr', ({ makeDb }) => {
    const { file, db, cursor } = setup(makeDb);
    bump(db, 'test');
    db.close();
    const r = runCli(['changes', file, '--since', cursor]);
    expect(r.status).toBe(3);
    expect(r.stdout).toBe('');
    expect(r.stderr).toMatch(/^sluice: GENERATION_CHANGED: /);
    expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
  });
});

test('no token is made of a cursor that decoding would refuse (so none is remembered decoded either)', () => {
  const good = {
    version: 2,
    sourceId: 's',
    generation: 1,
    seq: 5,
    tables: ['t'],
    schema: 'f',
    armed: [1],
    anchor: { seq: 5, digest: '0123456789abcdef' },
  };
  expect(parseCursor(encodeCursor(good))).toStrictEqual(good);
  for (const bad of [
    { seq: -5 },
    { seq: 1.5 },
    { generation: Number.NaN },
    { sourceId: '' },
    { seq: 2 ** 60 },
    { armed: [] },
    { anchor: { seq: 5, digest: 'xyz' } },
  ]) {
    expect(() => encodeCursor({ ...good, ...bad }), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: 'CURSOR_MALFORMED' }));
  }
});

test('a cursor token carries every field of the cursor it was made from (parsed without the cache that remembers tokens made in this process)', () => {
  const text = fc.string({ minLength: 1, maxLength: 12 });
  const cursorArb = fc
    .record(
      {
        version: fc.constant(2),
        sourceId: text,
        generation: fc.nat(),
        seq: fc.nat(),
        tables: fc.array(text, { maxLength: 4 }),
        schema: fc.string({ maxLength: 16 }),
        anchor: fc.option(fc.record({ seq: fc.nat(), digest: fc.stringMatching(/^[0-9a-f]{16}$/) }), { nil: null }),
        file: fc.record({
          dev: fc.bigInt({ min: 0n, max: 2n ** 64n }).map(String),
          ino: fc.bigInt({ min: 0n, max: 2n ** 64n }).map(String),
          birth: fc.double({ min: 0, max: 2e12, noNaN: true }).map((b) => b + 0),
        }), // JSON has no -0
        ext: fc.dictionary(
          text.filter((k) => k !== '__proto__'),
          fc.oneof(fc.nat(), text),
        ),
      },
      { requiredKeys: ['version', 'sourceId', 'generation', 'seq', 'tables', 'schema', 'anchor'] },
    )
    .chain((c) => fc.array(fc.nat(), { minLength: c.tables.length, maxLength: c.tables.length }).map((armed) => ({ ...c, armed })))
    .map((c) => ({
      ...c,
      ...(c.file === undefined ? {} : { file: { ...c.file } }),
      ...(c.anchor === null ? {} : { anchor: { ...c.anchor } }),
      ...(c.ext === undefined ? {} : { ext: { ...c.ext } }),
    })); // plain objects, as sluice makes them
  fc.assert(
    fc.property(cursorArb, (c) => {
      const token = encodeCursor(c);
      expect(parseCursor(token)).toStrictEqual(c);
      expect(decodeCursor(token)).toStrictEqual(parseCursor(token));
    }),
  );
});

test('a payload with each field wrong in one way (or a key too many) is CURSOR_MALFORMED, and the same payload made right decodes', ({
  makeDb,
}) => {
  const { cursor } = setup(makeDb);
  const payload = JSON.parse(Buffer.from(cursor.split('.')[1] as string, 'base64url').toString()) as Record<string, unknown>;
  const token = (p: Record<string, unknown>) => withCheck(`sluice2.${Buffer.from(JSON.stringify(p)).toString('base64url')}`);
  const good: Record<string, unknown> = { ...payload, i: ['1', '2', 3], x: { sv: 1 } };
  expect(parseCursor(token(good))).toMatchObject({ sourceId: payload.s, file: { dev: '1', ino: '2', birth: 3 }, ext: { sv: 1 } });
  const wrong: Record<string, Record<string, unknown>> = {
    'a key too many': { ...good, z: 1 },
    'no source id': { ...good, s: '' },
    'a source id that is a number': { ...good, s: 7 },
    'a negative generation': { ...good, g: -1 },
    'a fractional seq': { ...good, q: 1.5 },
    'a seq past 2^53': { ...good, q: 2 ** 60 },
    'a seq as text': { ...good, q: '5' },
    'no seq': (({ q: _q, ...rest }) => rest)(good),
    'tables that are not a list': { ...good, t: 't' },
    'a table that is a number': { ...good, t: [1], a: [1] },
    'a schema digest that is a number': { ...good, f: 1 },
    'a negative armed generation': { ...good, a: [-1] },
    'one armed generation too few': { ...good, a: [] },
    'an anchor of one item': { ...good, n: [1] },
    'an anchor digest that is not 16 hex digits': { ...good, n: [1, 'ABCDEF0123456789'] },
    'an anchor of three items': { ...good, n: [1, '0123456789abcdef', 1] },
    'a file identity of two items': { ...good, i: ['1', '2'] },
    'a birth time as text': { ...good, i: ['1', '2', '3'] },
    'extensions that are a list': { ...good, x: [1] },
    'extensions that are null': { ...good, x: null },
  };
  for (const [why, p] of Object.entries(wrong)) {
    expect(() => parseCursor(token(p)), why).toThrow(expect.objectContaining({ code: 'CURSOR_MALFORMED' }));
  }
});
