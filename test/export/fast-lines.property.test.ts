// the quick line check accepts only what the line schemas accept
import fc from 'fast-check';
import { test, expect } from '../support/fixtures.ts';
import { isSimpleEventLine, isSimpleRowLine, rowLineSchema } from '../../src/export/index.ts';
import { eventLineSchema } from '../../src/feed/index.ts';
import { fromJsonValue, jsonValueSchema } from '../../src/sqlite/index.ts';

// Values as lines carry them, and near misses: unsafe or fractional plain numbers, $f with a non-number or another key, $i, $b, arrays.
const value = fc.oneof(
  {
    arbitrary: fc.oneof(
      fc.constant(null),
      fc.string(),
      fc.integer(),
      fc.double().map(($f) => ({ $f })),
    ),
    weight: 12,
  },
  {
    arbitrary: fc.constantFrom(
      2 ** 53,
      -(2 ** 53),
      1.5,
      -0,
      1e300,
      { $f: 'Infinity' },
      { $f: '-0' },
      { $f: 1, x: 2 },
      { $i: '99999999999999999999' },
      { $b: 'AAE=' },
      { $t: '!!' },
      [1],
      {},
    ),
    weight: 1,
  },
);
const row = fc.dictionary(fc.constantFrom('id', 'name', 'n', '__proto__', 'r'), value, { maxKeys: 4 });
const maybe = <T>(a: fc.Arbitrary<T>, odd: fc.Arbitrary<unknown>) => fc.oneof({ arbitrary: a, weight: 6 }, { arbitrary: odd, weight: 1 });
const oddScalar = fc.constantFrom(undefined, 0, -1, 1.5, '', 'x', null, [], {});

const eventLine = fc
  .record(
    {
      sourceId: maybe(fc.string(), oddScalar),
      seq: maybe(fc.integer({ min: 1 }), oddScalar),
      table: maybe(fc.string(), oddScalar),
      op: maybe(fc.constantFrom('insert', 'update', 'delete'), oddScalar),
      key: maybe(fc.array(value, { maxLength: 2 }), oddScalar),
      beforeKey: fc.array(value, { maxLength: 2 }),
      before: maybe(fc.option(row), oddScalar),
      after: maybe(fc.option(row), oddScalar),
      image: maybe(fc.constantFrom('full', 'key'), oddScalar),
      ts: maybe(fc.integer(), oddScalar),
      extra: fc.constantFrom('x'),
    },
    { requiredKeys: ['sourceId', 'seq', 'table', 'op', 'key', 'before', 'after', 'image', 'ts'] },
  )
  .map((o) => JSON.parse(JSON.stringify(o)) as unknown);

const rowLine = fc
  .record(
    {
      type: maybe(fc.constant('row'), fc.constantFrom('batch', undefined, 1)),
      sourceId: maybe(fc.string(), oddScalar),
      seq: maybe(fc.nat(), oddScalar),
      table: maybe(fc.string(), oddScalar),
      row: maybe(row, oddScalar),
      v: fc.constant(2),
    },
    { requiredKeys: ['type', 'sourceId', 'seq', 'table', 'row'] },
  )
  .map((o) => JSON.parse(JSON.stringify(o)) as unknown);

test('an event line the quick check accepts is one the schema accepts, unchanged', () => {
  let accepted = 0;
  fc.assert(
    fc.property(eventLine, (json) => {
      if (!isSimpleEventLine(json)) return;
      accepted++;
      const r = eventLineSchema.safeParse(json);
      expect(r.success).toBe(true);
      expect(r.data).toStrictEqual(json);
    }),
    { numRuns: 3000 },
  );
  // The quick path is taken often enough for this to test it.
  expect(accepted).toBeGreaterThan(10);
});

test('a row line the quick check accepts is one the schema accepts, unchanged', () => {
  let accepted = 0;
  fc.assert(
    fc.property(rowLine, (json) => {
      if (!isSimpleRowLine(json)) return;
      accepted++;
      const r = rowLineSchema.safeParse(json);
      expect(r.success).toBe(true);
      expect(r.data).toStrictEqual(json);
    }),
    { numRuns: 3000 },
  );
  expect(accepted).toBeGreaterThan(10);
});

test('a JSON value decodes exactly when the value schema accepts it', () => {
  fc.assert(
    fc.property(fc.oneof(value, fc.jsonValue()), (j) => {
      const accepted = jsonValueSchema.safeParse(j).success;
      let decoded = true;
      try {
        fromJsonValue(j);
      } catch {
        decoded = false;
      }
      expect(decoded).toBe(accepted);
    }),
    { numRuns: 3000 },
  );
});
