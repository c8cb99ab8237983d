import { test, expect, describe, runSqliteCli, runCli } from '../support/fixtures.ts';
import { pythonExec } from '../support/journal.ts';
import { SECRET, cli, excludedOf, expectNowhere, setup } from './support/excluded-cli.ts';

/*
 * A column left out of capture moved under a new name by another program
 * (renamed, with or without a new column added under its old name, or the
 * table made again with its values in a new column): a rename cannot be
 * told from a drop and an add, so the table is not re-armed by itself; sync
 * and status say the enable that re-arms it (one that leaves the new column
 * out as well), and enable captures the new column only when told to.
 */

/** The suggested `sluice enable ... --exclude ...` in `text`, as arguments (the paths of these tests need no quoting). */
function suggestedEnable(text: string): string[] {
  const m = /sluice enable (\S+) users --exclude ([A-Za-z_]\w*(?:,[A-Za-z_]\w*)*)/.exec(text);
  if (m === null) throw new Error(`no enable --exclude suggested in: ${text}`);
  return ['enable', m[1] as string, 'users', '--exclude', m[2] as string];
}

/** sync SRC TGT and status SRC, both refused (exit 3, the table unarmed), with the enable both suggest. */
function heldUnarmed(src: string, tgt: string): string[] {
  const synced = runCli(['sync', src, tgt]);
  expect(synced.status, synced.stdout + synced.stderr).toBe(3);
  const status = runCli(['status', src]);
  expect(status.status).toBe(3);
  const fix = suggestedEnable(synced.stdout + synced.stderr);
  expect(suggestedEnable(status.stdout)).toEqual(fix);
  expect(status.stdout).not.toMatch(/fix: run sluice enable \S+ users(,|$)/m);
  return fix;
}

/** A source whose left-out column holds SECRET, migrated by the sqlite3 CLI with `migration`: sync and status hold it unarmed, no secret anywhere. */
function migrated(tmp: string, migration: string): { src: string; tgt: string; fix: string[] } {
  const { src, tgt } = setup(tmp);
  runSqliteCli(src, `UPDATE users SET secret = '${SECRET}' WHERE id = 1`);
  runSqliteCli(src, migration);
  const fix = heldUnarmed(src, tgt);
  expectNowhere(src, tgt);
  return { src, tgt, fix };
}

/** After the fix: more writes to every column, synced; the target has id and name only, and no secret is anywhere. */
function expectFixed(src: string, tgt: string, columns: string): void {
  pythonExec(src, `UPDATE users SET ${columns}, name = name || '+'; INSERT INTO users (id, name) VALUES (9, 'zed')`);
  cli(['sync', src, tgt]);
  expect(runSqliteCli(tgt, "SELECT group_concat(name) FROM pragma_table_info('users')").trim()).toBe('id,name');
  expect(runSqliteCli(tgt, 'SELECT count(*) FROM users').trim()).toBe('3');
  expectNowhere(src, tgt);
}

describe('a column left out of capture, moved under a new name by another program', () => {
  test('renamed, and a new empty column added under its old name (the column rotated): sync does not re-arm the table, and the enable it suggests leaves both out', ({
    tmp,
  }) => {
    const { src, tgt, fix } = migrated(
      tmp,
      "ALTER TABLE users RENAME COLUMN secret TO secret_old; ALTER TABLE users ADD COLUMN secret TEXT; UPDATE users SET name = 'ada!' WHERE id = 1;",
    );
    expect(fix[4]).toBe('secret,secret_old');
    const enabled = cli(fix);
    expect(enabled).toContain('armed as told: captures id, name; leaves out secret_old (new since armed), secret');
    expect(excludedOf(src)).toEqual(['secret_old', 'secret']);
    expectFixed(src, tgt, `secret_old = '${SECRET}', secret = '${SECRET}'`);
  });

  test('the table made again with the values in a new column (CREATE new, copy, DROP, RENAME): not re-armed by itself, the suggested enable leaves every column but the key out, and one naming the old set only is refused', ({
    tmp,
  }) => {
    // Made again, any column but the key may hold the values: the safe suggestion leaves them all out.
    const { src, tgt, fix } = migrated(
      tmp,
      'BEGIN; CREATE TABLE users_new(id INTEGER PRIMARY KEY, name TEXT, legacy TEXT, secret TEXT); INSERT INTO users_new SELECT id, name, secret, NULL FROM users; DROP TABLE users; ALTER TABLE users_new RENAME TO users; COMMIT;',
    );
    expect(fix[4]).toBe('name,legacy,secret');
    // Naming the old set only leaves legacy, new since armed, unnamed: refused.
    const refused = runCli(['enable', src, 'users', '--exclude', 'secret']);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('column legacy of users is new since it was armed');
    expect(runCli(['sync', src, tgt]).status).toBe(3);
    cli(['enable', src, 'users', '--exclude', 'secret,legacy']);
    expectFixed(src, tgt, `legacy = '${SECRET}', secret = '${SECRET}'`);
  });

  test('renamed only: the suggested enable works, and enable naming only the old name is refused until the new column is named either way', ({
    tmp,
  }) => {
    const { src, tgt, fix } = migrated(tmp, 'ALTER TABLE users RENAME COLUMN secret TO pw_old;');
    expect(fix[4]).toBe('secret,pw_old');
    // Naming the old name only would capture pw_old, which holds the values left out: refused, and nothing changes.
    const refused = runCli(['enable', src, 'users', '--exclude', 'secret']);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('column pw_old of users is new since it was armed');
    expect(refused.stderr).toContain('--include pw_old');
    expect(runCli(['status', src]).status).toBe(3);
    // Without --exclude, the same.
    expect(runCli(['enable', src, 'users']).stderr).toContain('--exclude secret,pw_old');
    expect(runCli(['enable', src, 'users', '--exclude', '']).status).toBe(1);
    cli(fix);
    expectFixed(src, tgt, `pw_old = '${SECRET}'`);
  });

  test('renamed only: enable --include captures the new column, as asked, and says which columns it captures', ({ tmp }) => {
    const { src, tgt } = setup(tmp);
    runSqliteCli(src, "ALTER TABLE users RENAME COLUMN secret TO shown; UPDATE users SET shown = 'open' WHERE id = 1;");
    const enabled = cli(['enable', src, 'users', '--exclude', 'secret', '--include', 'shown']);
    expect(enabled).toContain('captures id, name, shown (new since armed); leaves out secret');
    cli(['sync', src, tgt]);
    expect(runSqliteCli(tgt, 'SELECT shown FROM users WHERE id = 1').trim()).toBe('open');
    // A column added again under the old name stays left out (it is still in the set, by name).
    runSqliteCli(src, `ALTER TABLE users ADD COLUMN secret TEXT; UPDATE users SET secret = '${SECRET}', name = 'x';`);
    cli(['sync', src, tgt]);
    expectNowhere(src, tgt);
  });

  test('an unrelated column added by the sqlite3 CLI to a table with a column left out: held too, since it may be the excluded one moved; enable --include captures it', ({
    tmp,
  }) => {
    const { src, tgt } = setup(tmp);
    runSqliteCli(src, 'ALTER TABLE users ADD COLUMN note TEXT');
    const fix = heldUnarmed(src, tgt);
    expect(fix[4]).toBe('secret,note');
    cli(['enable', src, 'users', '--include', 'note']);
    runSqliteCli(src, `UPDATE users SET note = 'n1', secret = '${SECRET}' WHERE id = 1`);
    cli(['sync', src, tgt]);
    expect(runSqliteCli(tgt, 'SELECT note FROM users WHERE id = 1').trim()).toBe('n1');
    expectNowhere(src, tgt);
  });
});
