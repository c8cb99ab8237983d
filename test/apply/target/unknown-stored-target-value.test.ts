// a projection row this sluice does not read stops each command with one error naming the target the row and the value
import path from 'node:path';
import { test, expect, describe, runCli, runSqliteCli, failure } from '../../support/fixtures.ts';
import { expectOneLineError } from '../../cli/support/cli.ts';
import { dropProjection, enable, health, sync, verify, openDatabase, SluiceError } from '../../../src/index.ts';
import { readProjections } from '../../../src/apply/target/index.ts';

/*
 * A target's _sluice_projections rows are read once, where they are read,
 * into typed records: a kind of the kind registry, a state, a reason code
 * of the catalog. A value this sluice does not read (a newer sluice wrote
 * it, or a hand edit) stops the command with one error that names the
 * target, the row, the column and the value, and the fix, instead of a
 * green health, a NaN seq or a JSON parser's message from deep inside.
 */

const SCHEMA = `
CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT);
INSERT INTO notes VALUES (1, 'first'), (2, 'second');`;

function expectStoredValueError(err: unknown, tgt: string, column: string, value: string): void {
  expect(err).toBeInstanceOf(SluiceError);
  const e = err as SluiceError;
  expect(e.code).toBe('STORED_VALUE_UNKNOWN');
  expect(e.exitCode).toBe(3);
  expect(e.message).toContain(
    `Target ${path.resolve(tgt)}: _sluice_projections row notes has ${column} ${value}, which this sluice does not read`,
  );
  expect(e.message).toContain('run the sluice that wrote it');
}

describe('a projection row this sluice does not read', () => {
  test('a kind this sluice does not know stops health, sync, verify and drop with STORED_VALUE_UNKNOWN naming the target, the row and the value, and changes nothing', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file: src } = makeDb('app.db', SCHEMA);
    enable(db, ['notes']);
    const tgt = path.join(tmp, 'cache.db');
    await sync(src, tgt);
    expect(health(tgt).ok).toBe(true);
    runSqliteCli(tgt, "UPDATE _sluice_projections SET kind = 'aggregate'");
    const before = runSqliteCli(tgt, 'SELECT * FROM _sluice_projections; SELECT count(*) FROM notes;');
    for (const run of [() => health(tgt), () => sync(src, tgt), () => verify(src, tgt), () => dropProjection(tgt, 'notes')]) {
      const err = await failure(run);
      expectStoredValueError(err, tgt, 'kind', "'aggregate'");
      expect((err as Error).message).toContain('mirror, map, fts5 or custom');
    }
    expect(runSqliteCli(tgt, 'SELECT * FROM _sluice_projections; SELECT count(*) FROM notes;')).toBe(before);
  });

  test('a state, a reason, a number, a rebuild in progress or a detail that does not parse stops health the same way, naming the column', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file: src } = makeDb('app.db', SCHEMA);
    enable(db, ['notes']);
    const cases: [column: string, sql: string, shown: string][] = [
      ['state', "PRAGMA ignore_check_constraints = ON; UPDATE _sluice_projections SET state = 'paused'", "'paused'"],
      ['reason', "UPDATE _sluice_projections SET state = 'suspended', reason = 'NOT_A_REASON'", "'NOT_A_REASON'"],
      ['seq', "UPDATE _sluice_projections SET seq = 'abc'", "'abc'"],
      ['build', "UPDATE _sluice_projections SET build = '{oops'", "'{oops'"],
      ['detail', "UPDATE _sluice_projections SET state = 'suspended', reason = 'TARGET_DIVERGED', detail = '{oops'", "'{oops'"],
    ];
    for (const [column, sql, shown] of cases) {
      const tgt = path.join(tmp, `${column}.db`);
      await sync(src, tgt);
      runSqliteCli(tgt, sql);
      expectStoredValueError(await failure(() => health(tgt)), tgt, column, shown);
    }
  });

  test('a reason an older release stored under a retired name reads as the code that replaced it', async ({ makeDb, tmp }) => {
    const { db, file: src } = makeDb('app.db', SCHEMA);
    enable(db, ['notes']);
    const tgt = path.join(tmp, 'cache.db');
    await sync(src, tgt);
    runSqliteCli(tgt, "UPDATE _sluice_projections SET state = 'suspended', reason = 'UNKNOWN_PROJECTION'");
    const t = openDatabase(tgt, { readonly: true });
    try {
      expect(readProjections(t, 'main').map((r) => r.reason)).toEqual(['PROJECTION_NOT_FOUND']);
    } finally {
      t.close();
    }
    expect(health(tgt).projections.map((p) => p.reason)).toEqual(['PROJECTION_NOT_FOUND']);
  });

  test('the row of "*" in the projection set that does not read stops sync and health the same way', async ({ makeDb, tmp }) => {
    const { db, file: src } = makeDb('app.db', SCHEMA);
    enable(db, ['notes']);
    const cases: [column: string, sql: string, shown: string][] = [
      ['origin', "UPDATE _sluice_projection_set SET origin = 'weird'", "'weird'"],
      ['except_tables', "UPDATE _sluice_projection_set SET except_tables = '[oops'", "'[oops'"],
    ];
    for (const [column, sql, shown] of cases) {
      const tgt = path.join(tmp, `${column}.db`);
      await sync(src, tgt);
      runSqliteCli(tgt, sql);
      for (const run of [() => sync(src, tgt), () => health(tgt)]) {
        const err = await failure(run);
        expect(err).toBeInstanceOf(SluiceError);
        expect((err as SluiceError).code).toBe('STORED_VALUE_UNKNOWN');
        expect((err as Error).message).toContain(`Target ${path.resolve(tgt)}: _sluice_projection_set row * has ${column} ${shown}`);
      }
    }
  });

  test('sluice health prints it as one line and exits 3', async ({ makeDb, tmp }) => {
    const { db, file: src } = makeDb('app.db', SCHEMA);
    enable(db, ['notes']);
    const tgt = path.join(tmp, 'cache.db');
    await sync(src, tgt);
    runSqliteCli(tgt, "UPDATE _sluice_projections SET kind = 'aggregate'");
    const r = runCli(['health', tgt]);
    expect(r.status).toBe(3);
    expectOneLineError(r, 'STORED_VALUE_UNKNOWN');
    expect(r.stderr).toContain("_sluice_projections row notes has kind 'aggregate'");
  });
});
