import fs from 'node:fs';
import path from 'node:path';
import { convergeOnce, loadPipeline, planPipeline } from '../../src/pipeline/index.ts';
import { status } from '../../src/capture/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { SluiceError } from '../../src/errors.ts';
import { describe, expect, runCli, runSqliteCli, test } from '../support/fixtures.ts';

/*
 * A pipeline file capturing a table with a column left out (`exclude`),
 * and an application's migration adding a column to it: the table is not
 * re-armed by itself (the new column may be the one left out, renamed), so
 * its projections are suspended. The file says what to do with the new
 * column: `include` (capture it) or `exclude` (leave it out); until it
 * does, health --config and plan say so in the file's terms (not "sluice
 * run re-arms it", which it does not, nor a bare enable, which is refused),
 * and a pass enables nothing for the table; once it does, a pass re-arms
 * the table and the mirror rebuilds, the column left out still in no byte
 * of the target.
 */

const PW = 'pw-hunter2-secret';

/** app.db with users (id, name, pw) in a pipeline file leaving pw out (`capture` as given), built once by a pass, then a column phone added by the sqlite3 CLI (the app's migration). */
async function migrated(tmp: string, capture = '{users: {exclude: [pw]}}'): Promise<{ src: string; tgt: string; config: string }> {
  const src = path.join(tmp, 'app.db');
  const tgt = path.join(tmp, 'cache.db');
  const config = path.join(tmp, 'sluice.yml');
  runSqliteCli(src, `CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, pw TEXT); INSERT INTO users VALUES (1, 'ann', '${PW}-1');`);
  writeConfig(config, capture);
  const built = await convergeOnce(await loadPipeline(config, {}));
  expect(built.targets[0]?.error).toBeNull();
  expect(columns(tgt, 'users')).toEqual(['id', 'name']);
  runSqliteCli(src, `ALTER TABLE users ADD COLUMN phone TEXT; INSERT INTO users VALUES (2, 'bob', '${PW}-2', '555-0102');`);
  return { src, tgt, config };
}

function writeConfig(config: string, capture: string): void {
  fs.writeFileSync(
    config,
    `sources:\n  - path: app.db\n    capture: ${capture}\n    targets:\n      - path: cache.db\n        projections: ["*"]\n`,
  );
}

function columns(file: string, table: string): string[] {
  const db = openDatabase(file, { readonly: true });
  try {
    return (db.prepare(`SELECT name FROM pragma_table_info(?)`).pluck().all(table) as string[]).sort();
  } finally {
    db.close();
  }
}

function rows(file: string): unknown[] {
  const db = openDatabase(file, { readonly: true });
  try {
    return (db.prepare('SELECT * FROM users ORDER BY id').all() as Record<string, unknown>[]).map((r) => ({ ...r, id: Number(r.id) }));
  } finally {
    db.close();
  }
}

function armed(src: string): { armed: boolean; excluded: readonly string[] } | undefined {
  const db = openDatabase(src, { readonly: true });
  try {
    const t = status(db).tables.find((x) => x.name === 'users');
    return t === undefined ? undefined : { armed: t.armed, excluded: t.excluded };
  } finally {
    db.close();
  }
}

/** Whether a value of pw is in the target's bytes (the file or its -wal). */
function pwInTarget(tgt: string): boolean {
  return [tgt, `${tgt}-wal`].some((f) => fs.existsSync(f) && fs.readFileSync(f).includes(PW));
}

describe('a pipeline table leaving a column out, after a column is added to it', () => {
  test('health --config and plan say to declare the new column under capture.users (exclude or include), not that run re-arms it; a pass enables nothing', async ({
    tmp,
  }) => {
    const { src, tgt, config } = await migrated(tmp);
    const pass = await convergeOnce(await loadPipeline(config, {}));
    expect(pass.sources[0]?.enabled).toEqual([]);
    expect(pass.sources[0]?.error?.code).toBe('SCHEMA_CHANGED');
    expect(pass.sources[0]?.error?.message).toContain('under capture.users');
    expect(armed(src)).toEqual({ armed: false, excluded: ['pw'] });

    const h = runCli(['health', '--config', config]);
    expect(h.status).toBe(3);
    const said = h.stdout.split('\n').find((l) => l.includes('capture of table users')) ?? '';
    expect(said).toContain('has a new column since it was armed, phone, which may hold pw');
    expect(said).toMatch(
      /declare phone in .*sluice\.yml:3:\d+ under capture\.users: in "exclude" to leave it out, or in "include" to capture it; sluice run then re-arms users/,
    );
    expect(said).not.toContain('sluice run re-arms it');
    expect(said).not.toMatch(/sluice enable \S+ users\)/);

    const plan = await planPipeline(await loadPipeline(config, {}));
    expect(plan.converged).toBe(false);
    expect(plan.sources[0]?.enable).toEqual([]);
    expect(plan.sources[0]?.held.map((x) => [x.table, x.newColumns, x.code])).toEqual([['users', ['phone'], 'SCHEMA_CHANGED']]);
    const mirror = plan.targets[0]?.projections.find((p) => p.name === 'users');
    expect([mirror?.does, mirror?.reason]).toEqual(['suspend', 'TABLE_UNARMED']);
    expect(mirror?.fix).toContain('under capture.users');
    const text = runCli(['plan', '--config', config]);
    expect(text.stdout).toContain('not armed users (SCHEMA_CHANGED): enables nothing; table users of');
    expect(text.stdout).toMatch(/suspend users \[mirror\] \(TABLE_UNARMED\): .*in "include" to capture it/);
    expect(pwInTarget(tgt)).toBe(false);
  });

  test('include [phone] in the file: plan says enable then rebuild, a pass re-arms users, the mirror gets phone, and pw stays out of the target', async ({
    tmp,
  }) => {
    const { src, tgt, config } = await migrated(tmp);
    writeConfig(config, '{users: {exclude: [pw], include: [phone]}}');
    const plan = await planPipeline(await loadPipeline(config, {}));
    expect(plan.sources[0]?.enable).toEqual([{ table: 'users', mode: 'images', from: 'images', exclude: ['pw'], include: ['phone'] }]);
    expect(plan.sources[0]?.held).toEqual([]);
    const mirror = plan.targets[0]?.projections.find((p) => p.name === 'users');
    expect([mirror?.does, mirror?.reason]).toEqual(['rebuild', 'TABLE_REARMED']);
    expect(runCli(['plan', '--config', config]).stdout).toContain(
      'enable users (images, now captured in images mode, excluding pw, including phone',
    );
    const health = runCli(['health', '--config', config]);
    expect(health.stdout).toContain(`sluice run re-arms it, capturing phone`);
    expect(health.stdout).toContain('--exclude pw --include phone');

    const pass = await convergeOnce(await loadPipeline(config, {}));
    expect(pass.sources[0]?.error).toBeNull();
    expect(pass.sources[0]?.enabled).toEqual([{ table: 'users', mode: 'images' }]);
    expect(pass.targets[0]?.error).toBeNull();
    expect(armed(src)).toEqual({ armed: true, excluded: ['pw'] });
    expect(columns(tgt, 'users')).toEqual(['id', 'name', 'phone']);
    expect(rows(tgt)).toEqual([
      { id: 1, name: 'ann', phone: null },
      { id: 2, name: 'bob', phone: '555-0102' },
    ]);
    // A write after the re-arm is journaled with phone, without pw.
    runSqliteCli(src, `INSERT INTO users VALUES (3, 'cy', '${PW}-3', '555-0103')`);
    const after = await convergeOnce(await loadPipeline(config, {}));
    expect(after.targets[0]?.error).toBeNull();
    expect(rows(tgt)).toContainEqual({ id: 3, name: 'cy', phone: '555-0103' });
    expect(pwInTarget(tgt)).toBe(false);
    expect((await planPipeline(await loadPipeline(config, {}))).converged).toBe(true);
    expect(runCli(['health', '--config', config]).status).toBe(0);
  });

  test('exclude [pw, phone] in the file: a pass re-arms users leaving phone out too, and the mirror has neither', async ({ tmp }) => {
    const { src, tgt, config } = await migrated(tmp);
    writeConfig(config, '{users: {exclude: [pw, phone]}}');
    const plan = await planPipeline(await loadPipeline(config, {}));
    expect(plan.sources[0]?.enable).toEqual([{ table: 'users', mode: 'images', from: 'images', exclude: ['pw', 'phone'] }]);
    expect(plan.sources[0]?.held).toEqual([]);
    const pass = await convergeOnce(await loadPipeline(config, {}));
    expect(pass.sources[0]?.error).toBeNull();
    expect(pass.targets[0]?.error).toBeNull();
    expect(armed(src)).toEqual({ armed: true, excluded: ['pw', 'phone'] });
    expect(columns(tgt, 'users')).toEqual(['id', 'name']);
    expect(rows(tgt)).toEqual([
      { id: 1, name: 'ann' },
      { id: 2, name: 'bob' },
    ]);
    expect(pwInTarget(tgt)).toBe(false);
    expect([tgt, `${tgt}-wal`].some((f) => fs.existsSync(f) && fs.readFileSync(f).includes('555-0102'))).toBe(false);
  });

  test('a column both in exclude and in include is refused at load, with its line and the fix', async ({ tmp }) => {
    runSqliteCli(path.join(tmp, 'app.db'), 'CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, pw TEXT, phone TEXT);');
    const config = path.join(tmp, 'sluice.yml');
    writeConfig(config, '{users: {exclude: [pw, phone], include: [Phone]}}');
    let caught: unknown;
    try {
      await loadPipeline(config, {});
    } catch (err) {
      caught = err;
    }
    expect(caught).toBeInstanceOf(SluiceError);
    expect((caught as SluiceError).code).toBe('PIPELINE_INVALID');
    expect((caught as SluiceError).message).toMatch(
      /sluice\.yml:3:\d+: column Phone of users is both in "exclude" \(left out of capture\) and in "include" \(captured\)\. Keep it in one of them/,
    );
    expect(fs.existsSync(path.join(tmp, 'cache.db'))).toBe(false);
  });
});
