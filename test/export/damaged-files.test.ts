// each damaged export file gets its documented outcome
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, ROOT } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { importFile } from '../../src/export/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, dumpTables, expectOneLineError, scalar } from '../cli/support/cli.ts';

/*
 * fixtures/bad-jsonl: one good export and files damaged one way each
 * (README.md there). Every file is imported into a fresh target and gets
 * its outcome from outcomes.json: applied (exit 0), or refused with its
 * code and line number, exit 1. Either way the target must then equal a
 * fresh import of the good file's first `committedThrough` lines: nothing
 * of a refused batch or snapshot is committed, and an applied file is
 * applied once.
 */

const CORPUS = path.join(ROOT, 'fixtures', 'bad-jsonl');
type Outcome =
  | { outcome: 'applied'; committedThrough: number; incompleteTail?: number }
  | { outcome: 'refused'; code: string; line: number; committedThrough: number };
const outcomes = JSON.parse(fs.readFileSync(path.join(CORPUS, 'outcomes.json'), 'utf8')) as Record<string, Outcome>;

let dir: string;
const at = (f: string) => path.join(dir, f);
beforeAll(() => {
  dir = makeDir();
});
afterAll(() => removeDir(dir));

/** Tables and projection cursors of a target (empty for a target with nothing committed). */
function state(target: string): { tables: Record<string, string[]>; seqs: unknown } {
  if (!fs.existsSync(target)) return { tables: {}, seqs: null };
  const has = scalar(target, "SELECT count(*) FROM main.sqlite_schema WHERE name = '_sluice_projections'") === 1n;
  const seqs = has
    ? scalar(target, 'SELECT json_group_object(name, seq) FROM (SELECT name, seq FROM main._sluice_projections ORDER BY name)')
    : '{}';
  return { tables: dumpTables(target), seqs: seqs === '{}' ? null : seqs };
}

async function expected(lines: number): Promise<ReturnType<typeof state>> {
  const target = at(`good-through-${lines}.db`);
  if (lines > 0 && !fs.existsSync(target)) {
    const file = at(`good-through-${lines}.jsonl`);
    const good = fs.readFileSync(path.join(CORPUS, 'good.jsonl'), 'utf8').split('\n');
    fs.writeFileSync(file, `${good.slice(0, lines).join('\n')}\n`);
    // The reference target, through the library the CLI runs (the imports under test are the CLI's).
    const r = await importFile(target, file);
    expect(r.projections.filter((p) => p.state !== 'active')).toEqual([]);
  }
  return state(target);
}

describe('the bad-JSONL corpus', () => {
  test('every file in fixtures/bad-jsonl has an outcome, and there is one for each damage the corpus covers', () => {
    const files = fs
      .readdirSync(CORPUS)
      .filter((f) => f.endsWith('.jsonl'))
      .sort();
    expect(Object.keys(outcomes).sort()).toEqual(files);
    for (const f of [
      'deleted-event-line',
      'deleted-snapshot-row',
      'duplicated-batch',
      'reordered-lines',
      'torn-last-line',
      'line-from-another-source',
      'wrong-type',
      'marker-with-wrong-count',
    ])
      expect(files).toContain(`${f}.jsonl`);
  });

  test.each(Object.entries(outcomes))(
    '%s: its documented outcome, and the target holds exactly what that outcome commits',
    async (name, want) => {
      const file = path.join(CORPUS, name);
      const target = at(`${name}.db`);
      const r = await runCliAsync(['import', target, file, '--json']);
      if (want.outcome === 'applied') {
        expect(r.status, r.stderr).toBe(0);
        const rep = parseJson(r, S.importOutput);
        expect(rep.incompleteTail).toBe(want.incompleteTail ?? 0);
        expect(rep.projections.every((p) => p.state === 'active')).toBe(true);
        // Applied once: a second import changes nothing.
        const once = state(target);
        const again = await runCliAsync(['import', target, file, '--json']);
        expect(again.status, again.stderr).toBe(0);
        expect(parseJson(again, S.importOutput).batchesApplied).toBe(0);
        expect(state(target)).toEqual(once);
      } else {
        expect(r.status, r.stderr).toBe(1);
        expectOneLineError(r, want.code);
        expect(r.stderr).toContain(`${file}:${want.line}:`);
      }
      expect(state(target)).toEqual(await expected(want.committedThrough));
    },
  );
});
