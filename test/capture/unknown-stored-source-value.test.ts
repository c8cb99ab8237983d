// a source row this sluice does not read stops each command with one error naming the source the row and the value
import path from 'node:path';
import { test, expect, describe, runCli, runSqliteCli, failure } from '../support/fixtures.ts';
import { expectOneLineError } from '../cli/support/cli.ts';
import { alter, enable, openDatabase, status, sync, SluiceError } from '../../src/index.ts';
import { readConsumers } from '../../src/capture/index.ts';

/*
 * A source's own rows (_sluice_state, _sluice_tables, _sluice_ddl,
 * _sluice_consumers) are read once, where they are read, into typed
 * records. A value this sluice does not read (a newer sluice wrote it, or a
 * hand edit) stops the command with one error naming the source, the row,
 * the column and the value, instead of a JSON parser's message, a NaN, or a
 * capture mode no trigger of this sluice matches.
 */

const SCHEMA = `
CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT);
INSERT INTO notes VALUES (1, 'first'), (2, 'second');`;

function expectStoredValueError(err: unknown, src: string, table: string, row: string, column: string, value: string): void {
  expect(err).toBeInstanceOf(SluiceError);
  const e = err as SluiceError;
  expect(e.code).toBe('STORED_VALUE_UNKNOWN');
  expect(e.exitCode).toBe(3);
  expect(e.message).toContain(`Source ${path.resolve(src)}: ${table} row ${row} has ${column} ${value}`);
  expect(e.message).toContain('which this sluice does not read');
  expect(e.message).toContain('run the sluice that wrote it');
}

/** status() of the source at `file`, on a connection of its own. */
function statusOf(file: string): unknown {
  const db = openDatabase(file);
  try {
    return status(db);
  } finally {
    db.close();
  }
}

describe('a source row this sluice does not read', () => {
  test('a capture mode, column list or number of _sluice_tables, or a number of _sluice_state, stops status and sync naming the source, the row and the value', async ({
    makeDb,
    tmp,
  }) => {
    const cases: [table: string, row: string, column: string, sql: string, shown: string][] = [
      ['_sluice_tables', 'notes', 'mode', "UPDATE _sluice_tables SET mode = 'weird'", "'weird'"],
      ['_sluice_tables', 'notes', 'columns', "UPDATE _sluice_tables SET columns = '[oops'", "'[oops'"],
      ['_sluice_tables', 'notes', 'key_columns', `UPDATE _sluice_tables SET key_columns = '"id"'`, `'"id"'`],
      ['_sluice_tables', 'notes', 'armed_generation', "UPDATE _sluice_tables SET armed_generation = 'abc'", "'abc'"],
      ['_sluice_state', '1', 'generation', "UPDATE _sluice_state SET generation = 'abc'", "'abc'"],
    ];
    for (const [table, row, column, sql, shown] of cases) {
      const { db, file: src } = makeDb(`${column}.db`, SCHEMA);
      enable(db, ['notes']);
      db.close();
      runSqliteCli(src, sql);
      expectStoredValueError(await failure(() => statusOf(src)), src, table, row, column, shown);
      expectStoredValueError(await failure(() => sync(src, path.join(tmp, `${column}-cache.db`))), src, table, row, column, shown);
    }
  });

  test('the record of a sluice alter that does not read fails the projection whose sync needs it, naming the source, the row and the value', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file: src } = makeDb('app.db', SCHEMA);
    enable(db, ['notes']);
    const tgt = path.join(tmp, 'cache.db');
    // A map of the columns the alter leaves as they were: its cursor goes on across the alter, which sync proves from the record.
    const titles = { name: 'titles', source: 'notes', kind: 'map' as const, columns: { id: 'id', title: 'title' } };
    await sync(src, tgt, { projections: [titles] });
    alter(db, 'ALTER TABLE notes ADD COLUMN due TEXT');
    db.close();
    runSqliteCli(src, `UPDATE _sluice_ddl SET tables = replace(tables, '"altered"', '"moved"')`);
    // The projection that needs it fails with the error (recorded in its row, as any failed step); it keeps its rows and cursor.
    const r = await sync(src, tgt, { projections: [titles] });
    expect(r.projections.map((p) => [p.name, p.error?.code])).toEqual([['titles', 'STORED_VALUE_UNKNOWN']]);
    expect(r.projections[0]?.error?.message).toContain(`Source ${path.resolve(src)}: _sluice_ddl row 1 has tables '[{"table":"notes"`);
    expect(r.projections[0]?.error?.message).toContain(
      'which this sluice does not read (it reads a JSON array of the tables an alter changed)',
    );
  });

  test("an acknowledgement's target file of another shape reads as not recorded, and its seq must be a whole number", async ({
    makeDb,
    tmp,
  }) => {
    const { db, file: src } = makeDb('app.db', SCHEMA);
    enable(db, ['notes']);
    await sync(src, path.join(tmp, 'cache.db'));
    db.exec(`UPDATE _sluice_consumers SET target_file = '{"a":1}'`);
    expect(readConsumers(db).map((c) => c.targetFile)).toEqual([null]);
    db.exec(`UPDATE _sluice_consumers SET seq = 'abc'`);
    const consumer = db.prepare('SELECT name FROM _sluice_consumers').pluck().get() as string;
    expectStoredValueError(await failure(() => readConsumers(db)), src, '_sluice_consumers', consumer, 'seq', "'abc'");
  });

  test('sluice status prints it as one line and exits 3', async ({ makeDb }) => {
    const { db, file: src } = makeDb('app.db', SCHEMA);
    enable(db, ['notes']);
    db.close();
    runSqliteCli(src, "UPDATE _sluice_tables SET mode = 'weird'");
    const r = runCli(['status', src]);
    expect(r.status).toBe(3);
    expectOneLineError(r, 'STORED_VALUE_UNKNOWN');
    expect(r.stderr).toContain("_sluice_tables row notes has mode 'weird'");
  });
});
