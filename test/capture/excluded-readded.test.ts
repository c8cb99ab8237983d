import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { SECRET, cli, excludedOf, expectNowhere, setup } from './support/excluded-cli.ts';

/*
 * A column left out of capture stays out by its name: dropped by one
 * `sluice alter` (or by another program) and added again under its name
 * later, its new values are journaled nowhere (no `_sluice_` row, no
 * `changes` line, no target), as when the drop and the add are one script.
 * `enable --exclude` naming another set is the way to capture it.
 */

function expectNoLeak(src: string, tgt: string): void {
  runSqliteCli(
    src,
    `UPDATE users SET secret = '${SECRET}', name = 'ada2' WHERE id = 1; INSERT INTO users (id, name, secret) VALUES (3, 'cy', '${SECRET}');`,
  );
  cli(['sync', src, tgt]);
  expect(runSqliteCli(tgt, 'SELECT name FROM users ORDER BY id').trim().split('\n')).toEqual(['ada2', 'bob', 'cy']);
  expectNowhere(src, tgt);
  expect(excludedOf(src)).toEqual(['secret']);
}

describe('a column left out of capture, dropped and added again under its name', () => {
  test('by two separate sluice alter runs: still left out', ({ tmp }) => {
    const { src, tgt } = setup(tmp);
    cli(['alter', src, 'ALTER TABLE users DROP COLUMN secret']);
    cli(['alter', src, 'ALTER TABLE users ADD COLUMN secret TEXT']);
    expectNoLeak(src, tgt);
  });

  test('by the sqlite3 CLI, with a sluice sync re-arming between the drop and the add: still left out', ({ tmp }) => {
    const { src, tgt } = setup(tmp);
    runSqliteCli(src, 'ALTER TABLE users DROP COLUMN secret');
    cli(['sync', src, tgt]);
    runSqliteCli(src, 'ALTER TABLE users ADD COLUMN secret TEXT');
    cli(['sync', src, tgt]);
    expectNoLeak(src, tgt);
  });

  test('by sluice alter, then another column added by the sqlite3 CLI: the table re-arms by itself, the name still left out', ({ tmp }) => {
    const { src, tgt } = setup(tmp);
    cli(['alter', src, 'ALTER TABLE users DROP COLUMN secret']);
    runSqliteCli(src, 'ALTER TABLE users ADD COLUMN note TEXT');
    cli(['sync', src, tgt]);
    runSqliteCli(src, "UPDATE users SET note = 'n1' WHERE id = 1");
    cli(['sync', src, tgt]);
    expect(runSqliteCli(tgt, 'SELECT note FROM users WHERE id = 1').trim()).toBe('n1');
    runSqliteCli(src, 'ALTER TABLE users ADD COLUMN secret TEXT');
    cli(['sync', src, tgt]);
    expectNoLeak(src, tgt);
  });

  test('enable --exclude naming another set captures it again, as asked', ({ tmp }) => {
    const { src, tgt } = setup(tmp);
    cli(['alter', src, 'ALTER TABLE users DROP COLUMN secret']);
    expect(excludedOf(src)).toEqual(['secret']);
    cli(['enable', src, 'users', '--exclude', '']);
    expect(excludedOf(src)).toEqual([]);
    cli(['alter', src, 'ALTER TABLE users ADD COLUMN secret TEXT']);
    runSqliteCli(src, "UPDATE users SET secret = 'open' WHERE id = 1");
    cli(['sync', src, tgt]);
    expect(runSqliteCli(tgt, 'SELECT secret FROM users WHERE id = 1').trim()).toBe('open');
  });
});
