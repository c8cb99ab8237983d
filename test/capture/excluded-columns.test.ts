import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, failure, runSqliteCli } from '../support/fixtures.ts';
import { pythonExec } from '../support/journal.ts';
import { openDatabase, type Db } from '../../src/sqlite/index.ts';
import { enable, alter, readTables, verifyCapture, rearmCapture } from '../../src/capture/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { compileAgainstSource, parseDefinition, type ProjectionDefinitionInput } from '../../src/projection/index.ts';
import { SluiceError } from '../../src/errors.ts';
import type { Row } from '../../src/feed/index.ts';
import { decodeMask } from '../../src/capture/index.ts';
import { loadPipeline, convergeOnce } from '../../src/pipeline/index.ts';

/*
 * What leaving columns out of capture means besides the journal's bytes
 * (excluded-secret.test.ts): a change of only excluded columns journals
 * nothing whoever writes it; key and unknown columns are refused; a
 * definition reading an excluded column is refused naming it; a custom
 * handler's rows lack it; an excluded column dropped or renamed by other
 * DDL is schema drift, never a leak; and a pipeline file's exclude is what
 * enable is told.
 */

const SCHEMA = 'CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, pw TEXT, hits INTEGER, note TEXT)';

const journalCount = (db: Db) => Number(db.prepare('SELECT count(*) FROM _sluice_journal').pluck().get());

function compileError(db: Db, def: ProjectionDefinitionInput): SluiceError {
  try {
    compileAgainstSource(db, parseDefinition(def, 'test'));
  } catch (err) {
    if (err instanceof SluiceError) return err;
    throw err;
  }
  throw new Error(`${def.name} compiled`);
}

describe('columns left out of capture', () => {
  test('an update of only excluded columns journals nothing, from better-sqlite3, Python or the sqlite3 shell', ({ makeDb }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    db.exec("INSERT INTO users VALUES (1, 'a', 'p', 0, 'n')");
    enable(db, ['users'], { exclude: ['pw', 'hits'] });
    db.exec("UPDATE users SET pw = 'p1', hits = hits + 1");
    pythonExec(file, "UPDATE users SET pw = 'p2', hits = hits + 1");
    runSqliteCli(file, "UPDATE users SET pw = 'p3', hits = hits + 1; UPDATE users SET pw = CAST(pw AS BLOB);");
    expect(journalCount(db)).toBe(0);
    // A change of a captured column is journaled, without the excluded ones.
    pythonExec(file, "UPDATE users SET pw = 'p4', note = 'm'");
    expect(journalCount(db)).toBe(1);
    expect(db.prepare('SELECT c0, c1, c2, c3, c4, c5 FROM _sluice_journal').raw().get()).toEqual([1n, 'a', 'n', 1n, 'a', 'm']);
  });

  test('a key column and an unknown column are refused, naming the table and its columns', async ({ makeDb }) => {
    const { db } = makeDb('app.db', SCHEMA);
    const key = await failure(() => enable(db, ['users'], { exclude: ['id'] }));
    expect(key).toMatchObject({ code: 'KEY_COLUMN_EXCLUDED' });
    expect(String((key as Error).message)).toContain('column id is part of the primary key');
    const unknown = await failure(() => enable(db, ['users'], { exclude: ['passwd'] }));
    expect(unknown).toMatchObject({ code: 'UNKNOWN_COLUMN' });
    expect(String((unknown as Error).message)).toContain(
      'Table users has no column passwd to leave out of capture (it has id, name, pw, hits, note)',
    );
    expect(readTables(db)).toEqual([]);
  });

  test('a map, fts5 or mirror reading an excluded column is refused at compile, naming it; one that does not compiles without it', ({
    makeDb,
  }) => {
    const { db } = makeDb('app.db', SCHEMA);
    enable(db, ['users'], { exclude: ['pw'] });
    const refused: ProjectionDefinitionInput[] = [
      { name: 'm1', source: 'users', kind: 'map', columns: { id: 'id', p: { from: 'pw' } } },
      { name: 'm2', source: 'users', kind: 'map', columns: { id: 'id', h: { expr: 'length(pw)' } } },
      { name: 'm3', source: 'users', kind: 'map', columns: { id: 'id', name: 'name' }, filter: "pw <> ''" },
      { name: 'f1', source: 'users', kind: 'fts5', columns: ['name', 'pw'] },
    ];
    for (const def of refused) {
      const err = compileError(db, def);
      expect(err.code, def.name).toBe('EXCLUDED_COLUMN_READ');
      expect(err.message, def.name).toContain('reads column pw of users, which is left out of capture');
    }
    const mirror = compileAgainstSource(db, parseDefinition({ name: 'users', source: 'users', kind: 'mirror' }, 'test'));
    expect(mirror.columns.map((c) => c.name)).toEqual(['id', 'name', 'hits', 'note']);
  });

  test('a custom handler gets snapshot rows and events without the excluded column', async ({ makeDb, tmp }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    db.exec("INSERT INTO users VALUES (1, 'a', 'secret', 0, 'n')");
    enable(db, ['users'], { exclude: ['pw'] });
    const seen: Row[] = [];
    const changed: unknown[] = [];
    const def: ProjectionDefinitionInput = {
      name: 'c',
      source: 'users',
      kind: 'custom',
      handler: {
        version: '1',
        async init(rows) {
          for (const r of rows) seen.push(r);
        },
        async apply(e) {
          if (e.op === 'update') changed.push(e.changed);
          if (e.before !== null) seen.push(e.before);
          if (e.after !== null) seen.push(e.after);
        },
      },
    };
    const target = path.join(tmp, 't.db');
    await sync(file, target, { projections: [def] });
    pythonExec(file, "INSERT INTO users VALUES (2, 'b', 'secret2', 1, 'm'); UPDATE users SET name = 'c', pw = 'x' WHERE id = 1");
    await sync(file, target, { projections: [def] });
    expect(seen.length).toBe(4);
    // The update's changed-column mask is over the captured columns: pw changed too, but is not one of them.
    expect(changed).toEqual([['name']]);
    for (const r of seen) expect(Object.keys(r)).toEqual(['id', 'name', 'hits', 'note']);
  });

  test('an excluded column dropped by other DDL is drift: the re-arm keeps its name in the set (absent) and targets go on; one renamed stays unarmed until enable is told', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    db.exec("INSERT INTO users VALUES (1, 'a', 'secret', 0, 'n')");
    enable(db, ['users'], { exclude: ['pw', 'hits'] });
    const target = path.join(tmp, 't.db');
    expect((await sync(file, target)).projections.map((p) => p.state)).toEqual(['active']);
    // Not in any trigger, so SQLite lets any writer drop or rename it.
    runSqliteCli(file, 'ALTER TABLE users DROP COLUMN hits;');
    const dropped = verifyCapture(db).tables[0];
    expect(dropped).toMatchObject({ armed: false, reason: 'SCHEMA_CHANGED' });
    expect(rearmCapture(db)?.tables).toMatchObject([{ table: 'users', reason: 'SCHEMA_CHANGED' }]);
    expect(readTables(db)[0]).toMatchObject({ columns: ['id', 'name', 'note'], excluded: ['pw', 'hits'], excludedAbsent: ['hits'] });
    pythonExec(file, "UPDATE users SET pw = 'changed'; UPDATE users SET name = 'b'");
    const after = await sync(file, target);
    expect(after.projections.map((p) => p.state)).toEqual(['active']);

    // A rename cannot be told from a drop and an add: nothing is re-armed by itself.
    runSqliteCli(file, 'ALTER TABLE users RENAME COLUMN pw TO pass;');
    const renamed = verifyCapture(db).tables[0];
    expect(renamed).toMatchObject({ armed: false, reason: 'SCHEMA_CHANGED' });
    expect(renamed?.detail).toContain('column pw of users, left out of capture, is gone and the table has a new column');
    expect(rearmCapture(db)).toBeUndefined();
    expect(readTables(db)[0]).toMatchObject({ columns: ['id', 'name', 'note'], excluded: ['pw', 'hits'] });
    expect(await failure(() => enable(db, ['users']))).toMatchObject({ code: 'SCHEMA_CHANGED' });
    const told = enable(db, ['users'], { exclude: ['pass'] });
    expect(told.rearmed).toEqual(['users']);
    expect(readTables(db)[0]).toMatchObject({ columns: ['id', 'name', 'note'], excluded: ['pass'] });
    pythonExec(file, "UPDATE users SET pass = 'x2', name = 'c'");
    const width = Number(db.prepare('SELECT journal_width FROM _sluice_state').pluck().get());
    const cells = db.prepare('SELECT * FROM _sluice_journal ORDER BY seq DESC LIMIT 1').raw().get() as unknown[];
    expect(cells.slice(4, 4 + width)).not.toContain('x2');
    const last = await sync(file, target);
    expect(last.projections.map((p) => p.state)).toEqual(['active']);
    const t = openDatabase(target, { readonly: true });
    expect(t.prepare("SELECT name FROM pragma_table_info('users')").pluck().all()).toEqual(['id', 'name', 'note']);
    t.close();
  });

  test("a pipeline file's exclude is what enable is told, and changing it re-arms", async ({ makeDb, tmp }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    db.exec("INSERT INTO users VALUES (1, 'a', 'secret', 0, 'n')");
    const yml = path.join(tmp, 'sluice.yml');
    const write = (exclude: string) =>
      fs.writeFileSync(
        yml,
        `sources:\n  - path: ${path.basename(file)}\n    capture:\n      users: {exclude: ${exclude}}\n    targets:\n      - path: t.db\n        projections: ["*"]\n`,
      );
    write('[pw]');
    const first = await convergeOnce(await loadPipeline(yml));
    expect(first.sources[0]?.error).toBeNull();
    expect(readTables(db)[0]).toMatchObject({ excluded: ['pw'] });
    write('[pw, hits]');
    await convergeOnce(await loadPipeline(yml));
    expect(readTables(db)[0]).toMatchObject({ columns: ['id', 'name', 'note'], excluded: ['pw', 'hits'] });
    const t = openDatabase(path.join(tmp, 't.db'), { readonly: true });
    expect(t.prepare("SELECT name FROM pragma_table_info('users')").pluck().all()).toEqual(['id', 'name', 'note']);
    t.close();
    write('[id]');
    const refused = await convergeOnce(await loadPipeline(yml));
    expect(refused.sources[0]?.error).toMatchObject({ code: 'KEY_COLUMN_EXCLUDED' });
  });
  test('a generated column that reads an excluded one is refused at enable, and one added later keeps the table unarmed until it is excluded too', async ({
    makeDb,
  }) => {
    const { db, file } = makeDb(
      'app.db',
      'CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, "Pass Word" TEXT, copy TEXT AS ("pass word") VIRTUAL, up TEXT AS (upper(copy)) STORED, nlen INT AS (length(name)))',
    );
    db.exec(`INSERT INTO users (id, name, "Pass Word") VALUES (1, 'a', 'secret')`);
    // copy is pw itself, up is computed from copy: either would carry the secret into the journal.
    const refused = await failure(() => enable(db, ['users'], { exclude: ['PASS WORD'] }));
    expect(refused).toMatchObject({ code: 'GENERATED_FROM_EXCLUDED' });
    expect(String((refused as Error).message)).toContain('column copy of users is generated from Pass Word');
    expect(String((refused as Error).message)).toContain('column up of users is generated from copy');
    expect(readTables(db)).toEqual([]);
    enable(db, ['users'], { exclude: ['pass word', 'copy', 'up'] });
    expect(readTables(db)[0]).toMatchObject({ columns: ['id', 'name', 'nlen'] });
    // A generated column added later by another writer: not re-armed by itself, and enable must be told.
    runSqliteCli(file, 'ALTER TABLE users ADD COLUMN leak TEXT AS (substr("Pass Word", 1)) VIRTUAL;');
    const added = verifyCapture(db).tables[0];
    expect(added).toMatchObject({ armed: false, reason: 'SCHEMA_CHANGED' });
    expect(added?.detail).toContain('column leak of users is generated from Pass Word');
    expect(rearmCapture(db)).toBeUndefined();
    expect(await failure(() => enable(db, ['users']))).toMatchObject({ code: 'GENERATED_FROM_EXCLUDED' });
    pythonExec(file, "UPDATE users SET \"Pass Word\" = 'secret2', name = 'b'");
    enable(db, ['users'], { exclude: ['pass word', 'copy', 'up', 'leak'] });
    pythonExec(file, "UPDATE users SET \"Pass Word\" = 'secret3', name = 'c'");
    const cells = db.prepare('SELECT * FROM _sluice_journal').raw().all().flat();
    expect(cells.filter((c) => typeof c === 'string' && /secret/i.test(c))).toEqual([]);
  });
  test('sluice alter adding a generated column that reads an excluded one is refused, and nothing changes', async ({ makeDb }) => {
    const { db } = makeDb('app.db', SCHEMA);
    db.exec("INSERT INTO users VALUES (1, 'a', 'secret', 0, 'n')");
    enable(db, ['users'], { exclude: ['pw'] });
    const refused = await failure(() => alter(db, 'ALTER TABLE users ADD COLUMN leak TEXT AS (PW) VIRTUAL'));
    expect(refused).toMatchObject({ code: 'GENERATED_FROM_EXCLUDED' });
    expect(String((refused as Error).message)).toContain('column leak of users is generated from pw');
    expect(db.prepare("SELECT name FROM pragma_table_xinfo('users')").pluck().all()).toEqual(['id', 'name', 'pw', 'hits', 'note']);
    expect(readTables(db)[0]).toMatchObject({ columns: ['id', 'name', 'hits', 'note'], excluded: ['pw'] });
    expect(verifyCapture(db).tables[0]).toMatchObject({ armed: true });
  });
  test('a table made again with the excluded column under the name of a dropped captured one is not re-armed by itself', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('app.db', 'CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, email_enc TEXT, email TEXT)');
    db.exec("INSERT INTO users VALUES (1, 'a', 'secret', 'a@x')");
    enable(db, ['users'], { exclude: ['email_enc'] });
    const target = path.join(tmp, 't.db');
    await sync(file, target);
    // A migration's table rebuild: the names left are all names captured before, but email now holds email_enc's values.
    runSqliteCli(
      file,
      'BEGIN; CREATE TABLE users_new (id INTEGER PRIMARY KEY, name TEXT, email TEXT); INSERT INTO users_new SELECT id, name, email_enc FROM users; DROP TABLE users; ALTER TABLE users_new RENAME TO users; COMMIT;',
    );
    const state = verifyCapture(db).tables[0];
    expect(state).toMatchObject({ armed: false, reason: 'SCHEMA_CHANGED' });
    expect(state?.detail).toContain('column email_enc of users, left out of capture, is gone');
    expect(rearmCapture(db)).toBeUndefined();
    expect(await failure(() => enable(db, ['users']))).toMatchObject({ code: 'SCHEMA_CHANGED' });
    const held = await sync(file, target);
    expect(held.projections).toMatchObject([{ state: 'suspended', reason: 'TABLE_UNARMED' }]);
    expect(state?.detail).toContain('--exclude name,email (every column but the key');
    pythonExec(file, "UPDATE users SET name = 'b'");
    expect(db.prepare('SELECT * FROM _sluice_journal').raw().all().flat()).not.toContain('secret');
    const t = openDatabase(target, { readonly: true });
    expect(t.prepare('SELECT * FROM users').raw().all().flat()).not.toContain('secret');
    t.close();
    // Told, it captures what it is told.
    enable(db, ['users'], { exclude: ['email'] });
    expect(readTables(db)[0]).toMatchObject({ columns: ['id', 'name'], excluded: ['email'] });
  });
  test("a pipeline file's exclude that enable cannot apply to a captured table syncs none of the source's targets", async ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('app.db', 'CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, pw TEXT, c TEXT AS (pw))');
    db.exec("INSERT INTO users (id, name, pw) VALUES (1, 'a', 'secret')");
    enable(db, ['users'], { exclude: ['pw', 'c'] });
    const yml = path.join(tmp, 'sluice.yml');
    const write = (exclude: string) =>
      fs.writeFileSync(
        yml,
        `sources:\n  - path: ${path.basename(file)}\n    capture:\n      users: {exclude: ${exclude}}\n    targets:\n      - path: t.db\n        projections: ["*"]\n`,
      );
    // Captured with every column, then the file leaves pw out, but forgets the generated copy of it: enable refuses.
    enable(db, ['users'], { exclude: [] });
    write('[pw]');
    const r = await convergeOnce(await loadPipeline(yml));
    expect(r.sources[0]?.error).toMatchObject({ code: 'GENERATED_FROM_EXCLUDED' });
    expect(r.targets[0]?.error).toMatchObject({ code: 'EXCLUDE_NOT_APPLIED' });
    expect(r.targets[0]?.error?.message).toContain('users still captures pw');
    expect(fs.existsSync(path.join(tmp, 't.db'))).toBe(false);
    write('[pw, c]');
    const fixed = await convergeOnce(await loadPipeline(yml));
    expect(fixed.targets[0]?.error).toBeNull();
    const t = openDatabase(path.join(tmp, 't.db'), { readonly: true });
    expect(t.prepare('SELECT * FROM users').raw().all()).toEqual([[1n, 'a']]);
    t.close();
  });
  test('sluice alter making a table again without its excluded column is refused, since a captured name may hold its values', async ({
    makeDb,
  }) => {
    const { db, file } = makeDb('app.db', 'CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, email_enc TEXT, email TEXT)');
    db.exec("INSERT INTO users VALUES (1, 'a', 'secret', 'a@x')");
    enable(db, ['users'], { exclude: ['email_enc'] });
    const script = [
      'CREATE TABLE users_new (id INTEGER PRIMARY KEY, name TEXT, email TEXT)',
      'INSERT INTO users_new SELECT id, name, email_enc FROM users',
      'DROP TABLE users',
      'ALTER TABLE users_new RENAME TO users',
    ].join('; ');
    const refused = await failure(() => alter(db, script));
    expect(refused).toMatchObject({ code: 'ALTER_REFUSED' });
    expect(String((refused as Error).message)).toContain('makes users again without email_enc, which is left out of capture');
    expect(String((refused as Error).message)).toContain('users --exclude name,email (every column but the key');
    expect(readTables(db)[0]).toMatchObject({ columns: ['id', 'name', 'email'], excluded: ['email_enc'] });
    expect(db.prepare("SELECT name FROM pragma_table_info('users')").pluck().all()).toEqual(['id', 'name', 'email_enc', 'email']);
    // Run outside alter, the table stays unarmed until enable is told which columns to leave out.
    runSqliteCli(file, `BEGIN; ${script}; COMMIT;`);
    expect(rearmCapture(db)).toBeUndefined();
    enable(db, ['users'], { exclude: ['email'] });
    expect(readTables(db)[0]).toMatchObject({ columns: ['id', 'name'], excluded: ['email'] });
  });

  test('a column excluded after the fact leaves no trace in the retained masks: no update says it changed, narrow (INTEGER) or wide (BLOB) table', ({
    makeDb,
  }) => {
    const wideCols = Array.from({ length: 70 }, (_, i) => `c${i} INTEGER`).join(', ');
    for (const [name, schema, cols] of [
      ['narrow', SCHEMA, ['id', 'name', 'pw', 'hits', 'note']],
      [
        'wide',
        `CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT, ${wideCols}, pw TEXT)`,
        ['id', 'name', ...Array.from({ length: 70 }, (_, i) => `c${i}`), 'pw'],
      ],
    ] as const) {
      const { db } = makeDb(`${name}.db`, schema);
      db.exec("INSERT INTO users (id, name, pw) VALUES (1, 'a', 'p0')");
      enable(db, ['users']);
      db.exec("UPDATE users SET pw = 'p1' WHERE id = 1");
      db.exec("UPDATE users SET pw = 'p2', name = 'b' WHERE id = 1");
      const changed = () =>
        (db.prepare('SELECT mask FROM _sluice_journal WHERE op = 2 ORDER BY seq').pluck().all() as (bigint | Uint8Array | null)[]).map(
          (m) => decodeMask(m, cols),
        );
      // The control: before, the masks say pw changed.
      expect(changed(), name).toEqual([['pw'], ['name', 'pw']]);
      enable(db, ['users'], { exclude: ['pw'] });
      expect(changed(), name).toEqual([[], ['name']]);
    }
  });
});
