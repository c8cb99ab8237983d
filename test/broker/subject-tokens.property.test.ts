// every source id is one valid subject token and no two share one
import fc from 'fast-check';
import { test, expect, describe } from '../support/fixtures.ts';
import { defaultStreamName, encodeToken, subjectsOf } from '../../src/broker/index.ts';

/*
 * NATS forbids `.`, `*`, `>` and whitespace in a subject token, and a
 * stream name may not hold `/` or `\` either: whatever the source id, its
 * encoding is one token of [A-Za-z0-9_=-], and two ids never share one.
 */

const TOKEN = /^[A-Za-z0-9_=-]+$/;

describe('subject tokens', () => {
  test('any string encodes to one valid token, also as a stream name, and the encoding is one-to-one', () => {
    fc.assert(
      fc.property(fc.string({ unit: 'binary' }), fc.string({ unit: 'binary' }), (a, b) => {
        const ta = encodeToken(a);
        expect(ta).toMatch(TOKEN);
        expect(defaultStreamName(a)).toMatch(TOKEN);
        expect(subjectsOf(a).batch.split('.')).toHaveLength(3);
        if (a !== b) expect(encodeToken(b)).not.toBe(ta);
      }),
      { numRuns: 2000 },
    );
  });

  test('the characters NATS forbids, and the escape itself, are encoded; a UUID stays as it is', () => {
    expect(encodeToken('a.b*c>d e\tf/g\\h=i')).toBe('a=2Eb=2Ac=3Ed=20e=09f=2Fg=5Ch=3Di');
    expect(encodeToken('')).toBe('=');
    expect(encodeToken('é')).toBe('=C3=A9');
    // Lone surrogates have no UTF-8 bytes of their own (both would be U+FFFD's): each keeps its code unit.
    expect(encodeToken('\ud800')).toBe('==D800');
    expect(encodeToken('\udfff')).not.toBe(encodeToken('\ud800'));
    const uuid = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';
    expect(encodeToken(uuid)).toBe(uuid);
  });
});
