// alter with a target forecasts each projection as explain does and without one states the rules once
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { runCliAsync, parseJson, scalar } from '../../cli/support/cli.ts';
import { READERS_OF_A, readersOfA } from '../../cli/support/readers-of-a.ts';
import { sync } from '../../../src/apply/sync/index.ts';

/*
 * `sluice alter` tells what each projection will do. With --target it runs
 * each of that target's projections through explain's classifier, over the
 * source as the DDL leaves it (in the alter's own transaction, so a
 * --dry-run forecasts too, changing nothing), and the forecast is what
 * explain says after the alter and what the next sync does. Without a
 * target it states the rules once, however many consumers there are, and
 * never a rule explain does not follow (it used to say that a map with a
 * computed column or a filter rebuilds, while explain and sync went on).
 */

/** A map of `b` only and a mirror beside the readers of `a`. */
const MORE = [
  { name: 'mb', source: 't', kind: 'map', columns: { id: 'id', b: 'b' } },
  { name: 'tm', source: 't', kind: 'mirror', target: 'tm' },
];

async function pair(tmp: string): Promise<{ src: string; tgt: string }> {
  const { src, tgt } = await readersOfA(tmp);
  await sync(src, tgt, { projections: [...READERS_OF_A, ...MORE] as never });
  return { src, tgt };
}

type Said = Record<string, [string, string, string]>;

function saidOf(ps: readonly { name: string; classification: string; reason: string; sync: { does: string } }[]): Said {
  return Object.fromEntries(ps.map((p) => [p.name, [p.classification, p.reason, p.sync.does]]));
}

const schemaOf = (file: string) => scalar(file, "SELECT group_concat(sql, ';') FROM (SELECT sql FROM sqlite_schema ORDER BY name)");

describe('sluice alter --target', () => {
  test.for([
    ['a column none of the readers of a reads is dropped', 'ALTER TABLE t DROP COLUMN n'],
    ['a is dropped and added again', "ALTER TABLE t DROP COLUMN a; ALTER TABLE t ADD COLUMN a TEXT DEFAULT 'x'"],
    ['b is renamed', 'ALTER TABLE t RENAME COLUMN b TO bee'],
  ] as const)('%s: the dry run forecasts what explain says after the alter and what sync then does', async ([, ddl], { tmp }) => {
    const { src, tgt } = await pair(tmp);
    const schema = schemaOf(src);
    const dry = await runCliAsync(['alter', src, ddl, '--dry-run', '--target', tgt, '--json']);
    expect(dry.status, dry.stderr).toBe(0);
    const planned = parseJson(dry, S.alterOutput);
    expect(schemaOf(src), 'a dry run changes nothing').toBe(schema);
    expect(planned.targets?.map((t) => t.target)).toEqual([tgt]);
    const forecast = saidOf(planned.targets?.[0]?.projections ?? []);
    expect(Object.keys(forecast).sort()).toEqual(['f', 'm', 'mb', 'mc', 'mf', 'tm']);

    const real = await runCliAsync(['alter', src, ddl, '--target', tgt, '--json']);
    expect(real.status, real.stderr).toBe(0);
    expect(saidOf(parseJson(real, S.alterOutput).targets?.[0]?.projections ?? [])).toEqual(forecast);
    const e = await runCliAsync(['explain', src, tgt, '--json']);
    expect(saidOf(parseJson(e, S.explainOutput).projections)).toEqual(forecast);

    const r = await runCliAsync(['sync', src, tgt, '--json']);
    for (const p of parseJson(r, S.syncOutput).projections) {
      const does = forecast[p.name]?.[2];
      if (does === 'continue') expect([p.name, p.state, p.rebuilt]).toEqual([p.name, 'active', undefined]);
      else if (does === 'rebuild') expect([p.name, p.state, typeof p.rebuilt]).toEqual([p.name, 'active', 'string']);
      else expect([p.name, p.state]).toEqual([p.name, 'suspended']);
    }
    if (ddl.includes('DROP COLUMN n')) {
      // Computed columns and filters that do not name n go on, as plain ones do; the mirror carries every column.
      for (const n of ['m', 'mc', 'mf', 'f', 'mb']) expect(forecast[n]?.[2], n).toBe('continue');
      expect(forecast.tm?.[2]).toBe('rebuild');
    } else if (ddl.includes('DROP COLUMN a')) {
      for (const n of ['m', 'mc', 'mf', 'f', 'tm']) expect(forecast[n]?.[2], n).toBe('rebuild');
    } else {
      expect(forecast.mb).toEqual(['Rejected', 'ALTER_SOURCE_COLUMN_RENAMED', 'suspend']);
      expect(forecast.m?.[2]).toBe('continue');
    }
  });

  test('without a target, the rules are stated once however many consumers there are, and agree with explain', async ({ tmp }) => {
    const { src } = await pair(tmp);
    const human = await runCliAsync(['alter', src, 'ALTER TABLE t DROP COLUMN n', '--dry-run']);
    expect(human.status, human.stderr).toBe(0);
    expect(human.stdout).not.toContain('a map with a computed column or a filter rebuilds');
    const consumers = human.stdout.split('\n').filter((l) => l.includes('@'));
    expect(consumers.length).toBe(6);
    const rules = human.stdout.split('\n').filter((l) => /computed column/.test(l));
    expect(rules, human.stdout).toHaveLength(1);
    expect(rules[0]).toMatch(/goes on/);
    expect(human.stdout).toContain('--target');

    const json = parseJson(await runCliAsync(['alter', src, 'ALTER TABLE t DROP COLUMN n', '--dry-run', '--json']), S.alterOutput);
    expect(json.rules).toMatch(/computed column/);
    expect(json.targets).toBeUndefined();
    for (const c of json.consumers) for (const x of c.effects) expect(x.detail).not.toMatch(/computed column/);
  });

  test('a target that does not exist is an error naming it, and the alter is not run', async ({ tmp }) => {
    const { src } = await pair(tmp);
    const schema = schemaOf(src);
    const missing = path.join(tmp, 'nope.db');
    const r = await runCliAsync(['alter', src, 'ALTER TABLE t DROP COLUMN n', '--target', missing]);
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('DB_NOT_FOUND');
    expect(r.stderr).toContain(missing);
    expect(fs.existsSync(missing)).toBe(false);
    expect(schemaOf(src)).toBe(schema);
  });

  test('a target that is the source, or not a database, is refused before the alter runs: the source is left as it was', async ({
    tmp,
  }) => {
    const { src } = await pair(tmp);
    const schema = schemaOf(src);
    const junk = path.join(tmp, 'junk.db');
    fs.writeFileSync(junk, 'not a database, but long enough to be read as a header, and then some more bytes'.repeat(2));
    for (const [target, code] of [
      [src, 'TARGET_IS_SOURCE'],
      [junk, 'NOT_A_DATABASE'],
    ] as const) {
      const r = await runCliAsync(['alter', src, 'ALTER TABLE t ADD COLUMN extra TEXT', '--target', target]);
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).toContain(code);
      expect(schemaOf(src), `--target ${target}`).toBe(schema);
    }
  });
});
