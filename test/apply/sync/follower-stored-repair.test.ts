// a follower never suspends again with its stale reason a projection another sync repaired
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { makeDir, removeDir, runCliAsync, scalar, startCli, waitFor, type Spawned } from '../../cli/support/cli.ts';

/*
 * `sluice alter ... RENAME COLUMN c TO c2` suspends an fts5 index over c
 * (SOURCE_COLUMN_MISSING); the documented repair is a sync given a
 * definition that fits (`--projection` naming c2), run in another shell
 * while a follower runs. The follower had compiled its definitions once
 * after the alter and kept the stored projection it could not compile, with
 * its reason, until the source's schema changed again: its next pass (the
 * next source commit) wrote that suspension over the repaired projection,
 * with the old detail ("no column c"), while the target stored the c2
 * definition. health then printed the repair the user had just made, and
 * the follower said nothing more. A follower now compiles again when
 * another program changed the definitions the target stores, and never
 * writes a suspension over a definition other than the one it judged: one
 * that follows the target's definitions takes the repaired one up and
 * applies the commit; one whose own --projection definition still names c
 * leaves the repaired projection as it is and says, in its output and in
 * the projection's recorded failure, that its definition is refused.
 */

let dir: string;
const running: Spawned[] = [];
beforeAll(() => {
  dir = makeDir();
});
afterEach(() => {
  for (const f of running.splice(0)) if (f.child.exitCode === null && f.child.signalCode === null) f.child.kill('SIGKILL');
});
afterAll(() => removeDir(dir));

const FX_C = { name: 'fx', source: 't', kind: 'fts5', columns: ['a', 'c'] };
const FX_C2 = { name: 'fx', source: 't', kind: 'fts5', columns: ['a', 'c2'] };

/** A source t(id, a, c) of 50 rows, captured, with fx (fts5 over a, c) synced into the target, each through the CLI. */
async function setUp(name: string): Promise<{ src: string; tgt: string; defs: string }> {
  const src = path.join(dir, `${name}.db`);
  const tgt = path.join(dir, `${name}-cache.db`);
  const defs = path.join(dir, `${name}-fts.json`);
  runSqliteCli(
    src,
    "CREATE TABLE t(id INTEGER PRIMARY KEY, a TEXT, c TEXT); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i<50) INSERT INTO t SELECT i, 'a '||i, 'c '||i FROM n;",
  );
  fs.writeFileSync(defs, JSON.stringify(FX_C));
  for (const args of [
    ['enable', src, 't'],
    ['sync', src, tgt, '--projection', defs],
  ]) {
    const r = await runCliAsync(args);
    expect(r.status, `sluice ${args.join(' ')}: ${r.stdout}${r.stderr}`).toBe(0);
  }
  return { src, tgt, defs };
}

function follower(args: readonly string[]): Spawned {
  const f = startCli(args);
  running.push(f);
  return f;
}

function row(tgt: string): { definition: string; state: string; reason: string | null; detail: string | null } {
  return {
    definition: scalar(tgt, "SELECT definition FROM _sluice_projections WHERE name = 'fx'") as string,
    state: scalar(tgt, "SELECT state FROM _sluice_projections WHERE name = 'fx'") as string,
    reason: scalar(tgt, "SELECT reason FROM _sluice_projections WHERE name = 'fx'") as string | null,
    detail: scalar(tgt, "SELECT detail FROM _sluice_projections WHERE name = 'fx'") as string | null,
  };
}

/** Whether the follower said fx suspended (once, on stderr). */
function saidSuspended(f: Spawned): boolean {
  return f.stderr().includes('sluice: fx: SUSPENDED');
}

/** After the follower's first pass (the acknowledgement the setup wrote at `acked` written again), renames c, waits for it to suspend fx, then repairs it with a sync given `repair` in another process. */
async function alterThenRepair(f: Spawned, acked: number, src: string, tgt: string, repair: string): Promise<void> {
  // Its first pass ends with fx's acknowledgement written again (after it, the alter's commit brings a pass of its own).
  await waitFor("the follower's first pass", () => Number(scalar(src, 'SELECT max(updated_ms) FROM _sluice_consumers')) > acked);
  const alter = await runCliAsync(['alter', src, 'ALTER TABLE t RENAME COLUMN c TO c2']);
  expect(alter.status, alter.stderr).toBe(0);
  await waitFor('the follower suspends fx', () => saidSuspended(f), 30_000).catch((err: unknown) => {
    throw new Error(`${String(err)}; the follower said: ${f.stdout()}${f.stderr()}; fx: ${JSON.stringify(row(tgt))}`);
  });
  expect(row(tgt).reason).toBe('SOURCE_COLUMN_MISSING');
  fs.writeFileSync(repair, JSON.stringify(FX_C2));
  const sync = await runCliAsync(['sync', src, tgt, '--projection', repair]);
  expect(sync.status, `${sync.stdout}${sync.stderr}`).toBe(0);
  expect(sync.stdout).toContain('DEFINITION_CHANGED');
  expect(row(tgt)).toMatchObject({ state: 'active', reason: null });
}

/** fx as the other sync repaired it: active, over a and c2 (the follower `f` did not write over it; what it said if it did). */
function expectRepairKept(tgt: string, f: Spawned): void {
  const r = row(tgt);
  expect(r, `the follower wrote over the repair; it said: ${f.stdout().slice(-600)}${f.stderr().slice(-600)}`).toMatchObject({
    state: 'active',
    reason: null,
  });
  expect(JSON.parse(r.definition)).toMatchObject({ columns: ['a', 'c2'] });
}

describe.skipIf(process.platform === 'win32')('a follower and a repair made by another sync', () => {
  test('a follower of the stored definitions takes the repaired fx up and applies the next commit, never suspending it again', async () => {
    const { src, tgt } = await setUp('stored');
    const acked = Number(scalar(src, 'SELECT max(updated_ms) FROM _sluice_consumers'));
    const f = follower(['sync', src, tgt, '--follow']);
    await alterThenRepair(f, acked, src, tgt, path.join(dir, 'stored-fts2.json'));
    runSqliteCli(src, "UPDATE t SET a = 'moved' WHERE id = 1");
    // Its pass applies the commit to fx; the old code never did (fx suspended again, with the old reason).
    await waitFor(
      'the follower applies the commit to fx',
      () => Number(scalar(tgt, "SELECT count(*) FROM fx WHERE fx MATCH 'moved'")) === 1,
      10_000,
    ).catch(() => undefined);
    expectRepairKept(tgt, f);
    expect(Number(scalar(tgt, "SELECT count(*) FROM fx WHERE fx MATCH 'moved'"))).toBe(1);
    // Its output says fx was taken up again after the suspension it said (printed after the pass commits).
    await waitFor('the follower says fx is active again', () => f.stderr().includes('sluice: fx: active again'), 10_000).catch(
      () => undefined,
    );
    expect(f.stderr()).toMatch(/sluice: fx: SUSPENDED SOURCE_COLUMN_MISSING[^\n]*\nsluice: fx: active again, at seq \d+\n/);
    f.child.kill('SIGTERM');
    expect((await f.exited).status, f.stderr()).toBe(0);
    expect(row(tgt)).toMatchObject({ state: 'active', reason: null });
  });

  test('a follower whose own --projection still names c leaves the repaired fx as the other sync stored it, and says its definition is refused', async () => {
    const { src, tgt, defs } = await setUp('given');
    const acked = Number(scalar(src, 'SELECT max(updated_ms) FROM _sluice_consumers'));
    const f = follower(['sync', src, tgt, '--projection', defs, '--follow']);
    await alterThenRepair(f, acked, src, tgt, path.join(dir, 'given-fts2.json'));
    runSqliteCli(src, "UPDATE t SET a = 'moved' WHERE id = 1");
    // The follower's passes record its refused definition of fx in the projection's row (health shows it).
    await waitFor(
      'the follower records its refused definition',
      () => /no column c\b/.test(String(scalar(tgt, "SELECT last_error FROM _sluice_projections WHERE name = 'fx'"))),
      10_000,
    ).catch(() => undefined);
    expectRepairKept(tgt, f);
    const lastError = String(scalar(tgt, "SELECT last_error FROM _sluice_projections WHERE name = 'fx'"));
    expect(lastError).toMatch(/no column c\b.*The target stores another definition of fx, which this sync leaves as it is/);
    // Said once in its output, with the same words (printed after the pass records it).
    await waitFor('the follower says the refusal', () => f.stderr().includes('sluice: fx: FAILED UNKNOWN_COLUMN: '), 10_000).catch(
      () => undefined,
    );
    expect(f.stderr().split('sluice: fx: FAILED UNKNOWN_COLUMN: ')).toHaveLength(2);
    expect(f.stderr()).toContain('The target stores another definition of fx');
    f.child.kill('SIGTERM');
    await f.exited;
    expect(row(tgt)).toMatchObject({ state: 'active', reason: null });
  });
});
