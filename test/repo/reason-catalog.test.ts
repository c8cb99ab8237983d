// every reason code is in the catalog and docs reasons md is generated from it
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test, expect } from 'vitest';
import { REASONS, RETIRED_CODES, aliasesOf, currentCode, isReasonCode, reasonsOf, repairFor, type ReasonInfo } from '../../src/reasons.ts';
import { REASONS_DOC, renderReasons } from '../../scripts/reasons-doc.ts';

const SRC = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'src');

function sources(dir = SRC): Array<{ file: string; text: string }> {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return sources(p);
    return p.endsWith('.ts') && p !== path.join(SRC, 'reasons.ts')
      ? [{ file: path.relative(SRC, p), text: fs.readFileSync(p, 'utf8') }]
      : [];
  });
}

/**
 * Where src/ raises, returns or names a code: a SluiceError's code, a
 * `reason`, `code`, `problem` or `rebuild` field (also after `?:` or `??`),
 * a `code` variable's value or default, a code passed to the helpers that make
 * suspensions, unarmings and rebuilds. Any literal of two or more upper-case
 * words joined by "_" also counts, except SQLite's own result codes.
 */
const RAISED = [
  /new \w*Error\(\s*'([A-Z][A-Z0-9_]+)'/g,
  /\b(?:reason|code|problem|rebuild|rebuilt)\??:\s*(?:[^'\n,;]*?[?:]\s*)?'([A-Z][A-Z0-9_]+)'/g,
  /\bcode(?:: \w+)? = (?:[^;\n]*?: )?'([A-Z][A-Z0-9_]+)'/g,
  /\b(?:unarmed|rebuild|notCompared|initialize|repairAction)\([^()]*?'([A-Z][A-Z0-9_]+)'/g,
  /'([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+)'/g,
];
const SQLITE_OWN = /^SQLITE_/;

function namedCodes(): Map<string, Set<string>> {
  const found = new Map<string, Set<string>>();
  for (const { file, text } of sources()) {
    for (const re of RAISED) {
      for (const m of text.matchAll(re)) {
        const code = m[1] as string;
        if (SQLITE_OWN.test(code)) continue;
        if (!found.has(code)) found.set(code, new Set());
        found.get(code)?.add(file);
      }
    }
  }
  return found;
}

describe('the reason catalog', () => {
  test('docs/reasons.md is the catalog as scripts/reasons-doc.ts renders it', () => {
    const doc = fs.existsSync(REASONS_DOC) ? fs.readFileSync(REASONS_DOC, 'utf8') : '';
    expect(
      doc === renderReasons(),
      'docs/reasons.md differs from src/reasons.ts: run `npx tsx scripts/reasons-doc.ts` and commit docs/reasons.md',
    ).toBe(true);
  });

  test('every code src/ raises, returns or names is in the catalog', () => {
    const missing = [...namedCodes()].filter(([code]) => !isReasonCode(code)).map(([code, files]) => `${code} (${[...files].join(', ')})`);
    expect(missing, 'add these codes to REASONS in src/reasons.ts, then run `npx tsx scripts/reasons-doc.ts`').toEqual([]);
  });

  test('every code in the catalog is named somewhere in src/', () => {
    const named = namedCodes();
    const all = sources()
      .map((s) => s.text)
      .join('\n');
    const unused = Object.keys(REASONS).filter((code) => !named.has(code) && !all.includes(`'${code}'`));
    expect(unused, 'remove these entries from src/reasons.ts, or name them where they are raised').toEqual([]);
  });

  test('each suspension that clears by itself and each rebuild has its part in the catalog', () => {
    expect([...reasonsOf('suspend', true)].sort()).toEqual([
      'DEFINITION_INVALID',
      'NEEDS_IMAGES_MODE',
      'SOURCE_COLUMN_MISSING',
      'SOURCE_TABLE_MISSING',
      'TABLE_UNARMED',
      'TABLE_UNTRACKED',
      'TARGET_CONSTRAINT',
      'USER_TRIGGER_WRITES_PROJECTION',
    ]);
    // A reader rebuilds for these, and sync does not: it suspends the projection (TABLE_*), or fails with the error
    // before any projection (CAPTURE_*; COUNTER_MODE_TABLE never reaches sync: a mode change is SCHEMA_CHANGED).
    expect([...reasonsOf('rebuild')].filter((c) => !reasonsOf('rebuilt').has(c as never)).sort()).toEqual([
      'CAPTURE_ABSENT',
      'CAPTURE_FORMAT_UNKNOWN',
      'COUNTER_MODE_TABLE',
      'TABLE_UNARMED',
      'TABLE_UNTRACKED',
    ]);
    for (const c of reasonsOf('rebuild'))
      expect(
        REASONS[c].kinds.some((k) => k === 'rebuilt' || k === 'suspend' || k === 'error'),
        c,
      ).toBe(true);
  });

  test('a retired code is no entry of its own, is replaced by one entry only, and is named nowhere in src/', () => {
    const all = Object.values(REASONS).flatMap((r: ReasonInfo) => r.replaces ?? []);
    expect(all.length, 'UNKNOWN_PROJECTION is retired in favour of PROJECTION_NOT_FOUND').toBeGreaterThan(0);
    expect(new Set(all).size, 'each retired code is replaced by one entry').toBe(all.length);
    const named = namedCodes();
    for (const old of all) {
      expect(isReasonCode(old), `${old} is retired: remove its entry`).toBe(false);
      expect(named.has(old), `${old} is retired and must not be raised (src/ ${[...(named.get(old) ?? [])].join(', ')})`).toBe(false);
    }
    expect(RETIRED_CODES.get('UNKNOWN_PROJECTION')).toBe('PROJECTION_NOT_FOUND');
    expect(aliasesOf('PROJECTION_NOT_FOUND')).toEqual(['UNKNOWN_PROJECTION']);
    expect(aliasesOf('DB_NOT_FOUND')).toEqual([]);
    expect(currentCode('UNKNOWN_PROJECTION')).toBe('PROJECTION_NOT_FOUND');
    expect(currentCode('TARGET_DIVERGED')).toBe('TARGET_DIVERGED');
    expect(renderReasons()).toContain('| `UNKNOWN_PROJECTION` | `PROJECTION_NOT_FOUND` |');
  });

  test('a repair names the code and fills in the paths and the projection', () => {
    expect(repairFor('TARGET_DIVERGED', { source: 'a.db', target: 'b.db', projection: 'p' })).toBe(
      'TARGET_DIVERGED: find the cause (sluice health b.db --json shows what was found), then rebuild it: sluice reinit a.db b.db p',
    );
    expect(repairFor('NOT_A_CODE', { source: 'a.db', target: 'b.db', projection: 'p' })).toMatch(
      /^NOT_A_CODE: find the cause .* sluice reinit a.db b.db p$/,
    );
    expect(repairFor(undefined, { source: 'a.db', target: 'b.db', projection: 'p' })).toMatch(/^suspended: find the cause/);
  });
});
