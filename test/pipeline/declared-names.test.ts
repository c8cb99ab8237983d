import { describe, expect, test } from '../support/fixtures.ts';
import { sameColumns, toEnable, undeclaredCapture, type PipelineSource } from '../../src/pipeline/index.ts';

/*
 * A pipeline file names tables and columns as SQLite matches them: ASCII
 * letters folded, every other character as it is (SQLite's own rule,
 * foldIdent). `É` and `é` are two tables, and two columns, to SQLite; a
 * rule that folded them as one would call a table declared that is not,
 * or an excluded set applied that is not.
 */

const source = (tables: readonly { table: string; exclude?: readonly string[] }[]): PipelineSource => ({
  path: 'app.db',
  declaredAt: 'sluice.yml:1',
  capture: tables.map((t) => ({ ...t, mode: 'images' as const, declaredAt: 'sluice.yml:2' })),
  targets: [],
});

describe('names in a pipeline file', () => {
  test('fold ASCII case only, as SQLite does: ISSUES is issues, but É is not é', () => {
    const tables = [
      { name: 'issues', mode: 'images', excluded: [] },
      { name: 'É', mode: 'images', excluded: [] },
    ] as const;
    const captured = { tables } as unknown as Parameters<typeof undeclaredCapture>[1];
    expect(undeclaredCapture(source([{ table: 'ISSUES' }, { table: 'é' }]), captured)).toEqual(['É']);
    expect(toEnable(source([{ table: 'ISSUES' }, { table: 'é' }]), captured).map((t) => t.table)).toEqual(['é']);
    expect(sameColumns(['PW'], ['pw'])).toBe(true);
    expect(sameColumns(['Ä'], ['ä'])).toBe(false);
  });
});
