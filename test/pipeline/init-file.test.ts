// sluice init writes a commented pipeline file that loads and leaves the database untouched
import fs from 'node:fs';
import path from 'node:path';
import { parse } from 'yaml';
import { test, expect, describe, runSqliteCli, runPython } from '../support/fixtures.ts';
import { runCliAsync, parseJson, expectOneLineError } from '../cli/support/cli.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import {
  loadPipeline,
  checkPipelineSources,
  convergeOnce,
  declaredInputs,
  planPipeline,
  writeInitFile,
  written,
} from '../../src/pipeline/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { sync } from '../../src/apply/sync/index.ts';

/*
 * `sluice init DB` is where the tour starts: a commented sluice.yml for a
 * database a user already has. It must load as it is (and with its example
 * uncommented), name the tables it left out and why, never overwrite a file,
 * and leave the database byte for byte as it was, with no -wal or -shm made
 * beside it (an app may be about to open it).
 */

const SCHEMA = `PRAGMA journal_mode = wal;
CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT NOT NULL, body TEXT, votes INTEGER);
CREATE TABLE comments (id INTEGER PRIMARY KEY, issue_id INTEGER REFERENCES issues(id), body TEXT);
CREATE TABLE logs (at INTEGER, msg TEXT);
CREATE TABLE "my table" (k TEXT PRIMARY KEY, v BLOB);
CREATE VIRTUAL TABLE notes_fts USING fts5(x);
INSERT INTO issues VALUES (1, 'crash on start', 'it crashes', 3), (2, 'typo', NULL, 0);
INSERT INTO comments VALUES (1, 1, 'same here');`;

/** Every file of `dir` (names), sorted. */
const listing = (dir: string) => fs.readdirSync(dir).sort();

describe('sluice init', () => {
  test('init DB writes a commented sluice.yml beside it that loads, captures its tables, mirrors them, and leaves the database byte-identical with no -wal or -shm', async ({
    tmp,
  }) => {
    const db = path.join(tmp, 'app.db');
    runSqliteCli(db, SCHEMA); // the sqlite3 shell leaves a WAL file with its -wal checkpointed and removed
    expect(listing(tmp)).toEqual(['app.db']);
    const bytes = fs.readFileSync(db);

    const r = await runCliAsync(['init', 'app.db', '--json'], { cwd: tmp });
    expect(r.status, r.stderr).toBe(0);
    const out = parseJson(r, S.initOutput);
    const file = path.join(tmp, 'sluice.yml');
    expect(out).toEqual({
      out: file,
      source: db,
      target: path.join(tmp, 'app-cache.db'),
      tables: ['issues', 'comments', 'my table'],
      skipped: [{ table: 'logs', code: 'NO_PRIMARY_KEY' }],
      search: { name: 'issues_search', table: 'issues', columns: ['title', 'body'] },
    });
    expect(listing(tmp)).toEqual(['app.db', 'sluice.yml']);
    expect(fs.readFileSync(db).equals(bytes)).toBe(true);

    const text = fs.readFileSync(file, 'utf8');
    // Commented: the file says what it is, what run does with it, and why a table is left out.
    expect(text).toMatch(/^# sluice\.yml: /);
    expect(text).toContain('# - logs   # cannot be captured: NO_PRIMARY_KEY: ');
    expect(text).toContain('listen: 127.0.0.1:9464');
    const pipeline = await loadPipeline(file, {});
    checkPipelineSources(pipeline);
    const [source] = pipeline.sources;
    expect(source?.path).toBe(db);
    expect(source?.capture.map((c) => [c.table, c.mode])).toEqual([
      ['issues', 'images'],
      ['comments', 'images'],
      ['my table', 'images'],
    ]);
    expect(source?.targets.map((t) => [t.path, declaredInputs(t.projections)])).toEqual([[out.target, ['*']]]);
    expect(pipeline.listen).toBeDefined();

    // The example, uncommented, is a valid fts5 projection, and the whole file builds what it says.
    const example = /^(\s*)# (- \{name: issues_search, .*\})$/m.exec(text);
    expect(example, text).not.toBeNull();
    fs.writeFileSync(file, text.replace(example?.[0] ?? '', `${example?.[1] ?? ''}${example?.[2] ?? ''}`));
    const withSearch = await loadPipeline(file, {});
    checkPipelineSources(withSearch);
    const inputs = declaredInputs(withSearch.sources[0]?.targets[0]?.projections ?? []);
    expect(inputs).toEqual([
      '*',
      expect.objectContaining({ name: 'issues_search', source: 'issues', kind: 'fts5', columns: ['title', 'body'] }),
    ]);
    const app = openDatabase(db);
    try {
      enable(
        app,
        (withSearch.sources[0]?.capture ?? []).map((c) => c.table),
      );
    } finally {
      app.close();
    }
    const built = await sync(db, out.target, { projections: inputs });
    expect(built.projections.map((p) => [p.name, p.state]).sort()).toEqual([
      ['_my_20table', 'active'],
      ['comments', 'active'],
      ['issues', 'active'],
      ['issues_search', 'active'],
    ]);
  });

  test('init refuses a file already there, a database that does not exist, a file that is not SQLite and --out in a missing folder, with exit 1 and nothing written; --out puts the file elsewhere with paths relative to it', async ({
    tmp,
  }) => {
    const db = path.join(tmp, 'app.db');
    runSqliteCli(db, SCHEMA);
    const bytes = fs.readFileSync(db);
    fs.writeFileSync(path.join(tmp, 'sluice.yml'), '# mine\n');
    fs.writeFileSync(path.join(tmp, 'notes.txt'), 'not a database, not at all: just text that goes on for a while '.repeat(4));
    fs.mkdirSync(path.join(tmp, 'conf'));
    const [exists, missing, notDb, elsewhere, noFolder] = await Promise.all([
      runCliAsync(['init', 'app.db'], { cwd: tmp }),
      runCliAsync(['init', 'nope.db'], { cwd: tmp }),
      runCliAsync(['init', 'notes.txt', '--out', 'notes.yml'], { cwd: tmp }),
      runCliAsync(['init', 'app.db', '--out', path.join('conf', 'pipeline.yml')], { cwd: tmp }),
      runCliAsync(['init', 'app.db', '--out', path.join('missing', 'dir', 'sluice.yml')], { cwd: tmp }),
    ]);
    // --out in a folder that does not exist: said plainly with the folder and the fix, and no folder is made.
    expect(noFolder.status).toBe(1);
    expectOneLineError(noFolder, 'OUTPUT_FOLDER_MISSING');
    expect(noFolder.stderr).toContain(`the folder ${path.join('missing', 'dir')} of`);
    expect(noFolder.stderr).toContain('mkdir -p');
    expect(exists.status).toBe(1);
    expectOneLineError(exists, 'OUTPUT_EXISTS');
    expect(exists.stderr).toContain('never overwrites');
    expect(fs.readFileSync(path.join(tmp, 'sluice.yml'), 'utf8')).toBe('# mine\n');
    expect(missing.status).toBe(1);
    expectOneLineError(missing, 'DB_NOT_FOUND');
    expect(notDb.status).toBe(1);
    expectOneLineError(notDb, 'NOT_A_DATABASE');
    expect(elsewhere.status, elsewhere.stderr).toBe(0);
    expect(elsewhere.stdout).toContain('next: read it, then sluice run --config');
    // Nothing else was written: no nope.db, no notes.yml, no -wal or -shm.
    expect(listing(tmp)).toEqual(['app.db', 'conf', 'notes.txt', 'sluice.yml']);
    expect(fs.readFileSync(db).equals(bytes)).toBe(true);
    const conf = path.join(tmp, 'conf', 'pipeline.yml');
    expect(fs.readFileSync(conf, 'utf8')).toContain('  - path: ../app.db\n');
    const p = await loadPipeline(conf, {});
    expect([p.sources[0]?.path, p.sources[0]?.targets[0]?.path]).toEqual([db, path.join(tmp, 'app-cache.db')]);
  });

  test('init of a database an app holds open (its -wal and -shm there) and of an empty one writes only the pipeline file, which loads', async ({
    tmp,
    makeDb,
  }) => {
    const { db } = makeDb('live.db', "CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT); INSERT INTO t VALUES (1, 'a');");
    const before = listing(tmp);
    expect(before).toEqual(['live.db', 'live.db-shm', 'live.db-wal']);
    const live = writeInitFile(path.join(tmp, 'live.db'), path.join(tmp, 'live.yml'));
    expect(live.tables).toEqual(['t']);
    expect(live.search?.columns).toEqual(['name']);
    db.prepare("INSERT INTO t VALUES (2, 'b')").run(); // the app goes on writing
    const empty = path.join(tmp, 'empty.db');
    fs.writeFileSync(empty, '');
    const none = writeInitFile(empty, path.join(tmp, 'empty.yml'));
    expect([none.tables, none.search]).toEqual([[], null]);
    expect(fs.statSync(empty).size).toBe(0);
    expect(listing(tmp)).toEqual([...before, 'empty.db', 'empty.yml', 'live.yml'].sort());
    checkPipelineSources(await loadPipeline(path.join(tmp, 'live.yml'), {}));
    checkPipelineSources(await loadPipeline(path.join(tmp, 'empty.yml'), {}));
  });

  test('init of a database a crashed app left with a -wal and no -shm reads the tables only the log holds, and makes no -shm beside it', async ({
    tmp,
    makeDb,
  }) => {
    const { db } = makeDb('app.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT);');
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.exec("CREATE TABLE later (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO later VALUES (1, 'only in the log');");
    // The app crashed: its database and log, with no -shm and nothing holding them (copied while it was open).
    const crashed = path.join(tmp, 'crashed');
    fs.mkdirSync(crashed);
    fs.copyFileSync(path.join(tmp, 'app.db'), path.join(crashed, 'app.db'));
    fs.copyFileSync(path.join(tmp, 'app.db-wal'), path.join(crashed, 'app.db-wal'));
    db.close();
    const bytes = (f: string) => fs.readFileSync(path.join(crashed, f)).toString('base64');
    const before = [bytes('app.db'), bytes('app.db-wal')];
    const f = writeInitFile(path.join(crashed, 'app.db'), path.join(tmp, 'crashed.yml'));
    expect(f.tables).toEqual(['t', 'later']);
    expect(listing(crashed)).toEqual(['app.db', 'app.db-wal']);
    expect([bytes('app.db'), bytes('app.db-wal')]).toEqual(before);
  });

  test('init writes table names and paths that hold ${ or $${ so that the file loads back to those exact names, not to an environment variable', async ({
    tmp,
  }) => {
    // A folder whose name holds ${HOME}: every path in the file carries it.
    const dir = path.join(tmp, 'x${HOME}y');
    fs.mkdirSync(dir);
    const db = path.join(dir, 'app.db');
    runSqliteCli(db, ['${HOME}', 'a$${b', 'c$d', 'plain'].map((n) => `CREATE TABLE "${n}" (id INTEGER PRIMARY KEY, v TEXT);`).join('\n'));
    const made = writeInitFile(db, path.join(tmp, 'sluice.yml'));
    expect(made.tables).toEqual(['${HOME}', 'a$${b', 'c$d', 'plain']);
    // With HOME set, a name read as the variable would quietly be another table; unset, the file would not load.
    for (const env of [{ HOME: '/root' }, {}]) {
      const p = await loadPipeline(made.out, env);
      expect(p.sources[0]?.path).toBe(db);
      expect(p.sources[0]?.targets[0]?.path).toBe(made.target);
      expect(p.sources[0]?.capture.map((c) => c.table)).toEqual(made.tables);
      checkPipelineSources(p);
    }
  });

  test('init writes a capture map (a table in keys mode) whose keys hold ${ or $${ as they are, since keys are never expanded: the file loads back to those exact names', async ({
    tmp,
  }) => {
    const db = path.join(tmp, 'app.db');
    const names = ['price${USD}', 'a$${b', 'k'];
    runSqliteCli(db, names.map((n) => `CREATE TABLE "${n}" (id INTEGER PRIMARY KEY, v TEXT);`).join('\n'));
    const app = openDatabase(db);
    try {
      enable(app, ['k'], { mode: 'keys' });
    } finally {
      app.close();
    }
    const made = writeInitFile(db, path.join(tmp, 'sluice.yml'));
    expect(made.tables).toEqual(names);
    for (const env of [{ USD: 'EUR' }, {}]) {
      const p = await loadPipeline(made.out, env);
      expect(p.sources[0]?.capture.map((c) => [c.table, c.mode])).toEqual([
        ['price${USD}', 'images'],
        ['a$${b', 'images'],
        ['k', 'keys'],
      ]);
      checkPipelineSources(p);
    }
  });

  test('init writes a database, folder and tables whose names hold a newline, #, ": " or quotes as values that load back to those names, never as live YAML', async ({
    tmp,
  }) => {
    // A newline then `prune: true`: written raw anywhere (a comment included), the rest of the name is a key of the file.
    const hostile = ['x\nprune: true #', 'a # b', 'k: v', `q"u'o\\te`, '\r- tab\tle', '{[*&!|>%@`'];
    const dir = path.join(tmp, `dir\nlisten: 0.0.0.0:1 # '"`);
    fs.mkdirSync(dir);
    const db = path.join(dir, `${hostile[0]}.db`);
    // Python's sqlite3 is the writer: the sqlite3 shell cannot be handed such a file name.
    runPython(
      "import sqlite3, sys\nc = sqlite3.connect(sys.argv[1])\nfor n in sys.argv[2:]: c.execute('CREATE TABLE \"%s\" (id INTEGER PRIMARY KEY, title TEXT)' % n.replace('\"', '\"\"'))\nc.commit()",
      [db, ...hostile],
    );
    const made = writeInitFile(db, path.join(tmp, 'sluice.yml'));
    expect(made.tables).toEqual(hostile);
    const text = fs.readFileSync(made.out, 'utf8');
    // The file's keys are the two init writes, and its capture list is each table once.
    expect(Object.keys(parse(text) as object)).toEqual(['sources', 'listen']);
    const p = await loadPipeline(made.out, {});
    expect(p.prune).toBe(false);
    expect(p.listen).toEqual({ host: '127.0.0.1', port: 9464 });
    expect(p.sources[0]?.path).toBe(db);
    expect(p.sources[0]?.targets[0]?.path).toBe(made.target);
    expect(p.sources[0]?.capture.map((c) => c.table)).toEqual(hostile);
    checkPipelineSources(p);
    // Every line that is not a comment is one init wrote: none comes from a name.
    for (const line of text.split('\n'))
      expect(line, text).toMatch(
        /^(\s*#.*|sources:|\s*- path: .*|\s*capture:|\s*- ".*"|\s*targets:|\s*projections:|\s*- "\*".*|listen: .*|)$/,
      );
  });

  test('init of a source that captures tables in keys and counter mode declares each in the mode it has, so plan switches none of them (a re-arm) and the file is what the source is', async ({
    tmp,
    makeDb,
  }) => {
    const { db, file } = makeDb(
      'app.db',
      'CREATE TABLE audit (id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE hits (id INTEGER PRIMARY KEY, n INT); CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT); CREATE TABLE logs (at INTEGER);',
    );
    enable(db, ['audit'], { mode: 'keys' });
    enable(db, ['hits'], { mode: 'counter' });
    enable(db, ['issues']);
    db.close();
    const made = writeInitFile(file, path.join(tmp, 'sluice.yml'));
    expect(made.tables).toEqual(['audit', 'hits', 'issues']);
    const text = fs.readFileSync(made.out, 'utf8');
    expect(text).toContain('# logs:   # cannot be captured: NO_PRIMARY_KEY: ');
    const p = await loadPipeline(made.out, {});
    checkPipelineSources(p);
    expect(p.sources[0]?.capture.map((c) => [c.table, c.mode])).toEqual([
      ['audit', 'keys'],
      ['hits', 'counter'],
      ['issues', 'images'],
    ]);
    const plan = await planPipeline(p);
    expect(plan.sources[0]?.enable).toEqual([]);
    expect(plan.sources[0]?.undeclaredCapture).toEqual([]);
    // "*" mirrors the images-mode table only: the target is built with it, and then the pass has nothing left to do.
    expect(plan.targets[0]?.projections.map((x) => [x.name, x.does])).toEqual([['issues', 'build']]);
    const report = await convergeOnce(p);
    expect(report.sources[0]?.enabled).toEqual([]);
    expect((await planPipeline(p)).converged).toBe(true);
  });

  test('init over a table captured with columns left out (enable --exclude) never names one of those in its fts5 example, so the example uncommented builds', async ({
    tmp,
    makeDb,
  }) => {
    const { db, file } = makeDb(
      'app.db',
      "CREATE TABLE notes (id INTEGER PRIMARY KEY, title TEXT, body TEXT); INSERT INTO notes VALUES (1, 't', 'secret');",
    );
    enable(db, ['notes'], { exclude: ['body'] });
    db.close();
    const made = writeInitFile(file, path.join(tmp, 'sluice.yml'));
    expect(made.search).toEqual({ name: 'notes_search', table: 'notes', columns: ['title'] });
    const text = fs.readFileSync(made.out, 'utf8');
    const example = /^(\s*)# (- \{name: notes_search, .*\})$/m.exec(text);
    expect(example, text).not.toBeNull();
    fs.writeFileSync(made.out, text.replace(example?.[0] ?? '', `${example?.[1] ?? ''}${example?.[2] ?? ''}`));
    const p = await loadPipeline(made.out, {});
    checkPipelineSources(p);
    const plan = await planPipeline(p);
    expect(plan.targets[0]?.refused).toBeNull();
    expect(plan.targets[0]?.projections.map((x) => [x.name, x.does])).toEqual([
      ['notes_search', 'build'],
      ['notes', 'build'],
    ]);
    const report = await convergeOnce(p);
    expect(report.targets[0]?.error).toBeNull();
    expect(report.targets[0]?.sync?.projections.map((x) => [x.name, x.state]).sort()).toEqual([
      ['notes', 'active'],
      ['notes_search', 'active'],
    ]);
  });

  test('init of a source whose every table is in keys or counter mode writes its target commented out with why ("*" would mirror none), and uncommented, plan and health --config say run refuses it (NOTHING_TO_SYNC), as run does', async ({
    tmp,
    makeDb,
  }) => {
    const { db, file } = makeDb(
      'app.db',
      'CREATE TABLE audit (id INTEGER PRIMARY KEY, body TEXT); CREATE TABLE hits (id INTEGER PRIMARY KEY, n INT);',
    );
    enable(db, ['audit'], { mode: 'keys' });
    enable(db, ['hits'], { mode: 'counter' });
    db.close();
    const made = writeInitFile(file, path.join(tmp, 'sluice.yml'));
    expect([made.tables, made.declaresTarget, made.search]).toEqual([['audit', 'hits'], false, null]);
    const text = fs.readFileSync(made.out, 'utf8');
    expect(text).toContain('(sync refuses it: NOTHING_TO_SYNC)');
    const p = await loadPipeline(made.out, {});
    checkPipelineSources(p);
    expect(p.sources[0]?.targets).toEqual([]);
    expect((await planPipeline(p)).converged).toBe(true);

    // Uncommented as it is: plan and health --config say what run meets, not that run builds it.
    fs.writeFileSync(made.out, text.replace(/^ {4}# (targets:| {2}- path| {4}projections:| {6}- "\*")/gm, '    $1'));
    const withTarget = await loadPipeline(made.out, {});
    const plan = await planPipeline(withTarget);
    expect(plan.targets[0]?.refused).toMatchObject({ code: 'NOTHING_TO_SYNC', projection: null });
    expect(plan.targets[0]?.refused?.fix).toContain('audit (keys), hits (counter) are captured in a mode that feeds no mirror');
    const health = await runCliAsync(['health', '--config', 'sluice.yml', '--json'], { cwd: tmp });
    expect(health.status, health.stderr).toBe(3);
    const h = parseJson(health, S.pipelineHealthOutput);
    expect(h.targets[0]?.problems).toEqual([expect.stringContaining('does not exist, and sluice run cannot build it: NOTHING_TO_SYNC: ')]);
    expect(health.stdout).not.toContain('sluice run builds it');
    const report = await convergeOnce(withTarget);
    expect(report.targets[0]?.error?.code).toBe('NOTHING_TO_SYNC');
    // The pass's refusal says the file's fix, in the words plan says it (not `sluice enable --mode images`).
    expect(report.targets[0]?.error?.message).toBe(`${plan.targets[0]?.refused?.fix ?? ''}.`);
  });

  test('init of a sluice target refuses it with TARGET_NOT_SOURCE naming the file and writes nothing, since capture on a target is refused by every pass', async ({
    tmp,
  }) => {
    const db = path.join(tmp, 'app.db');
    runSqliteCli(db, SCHEMA);
    const app = openDatabase(db);
    try {
      enable(app, ['issues']);
    } finally {
      app.close();
    }
    const cache = path.join(tmp, 'cache.db');
    await sync(db, cache);
    const before = listing(tmp);
    const r = await runCliAsync(['init', 'cache.db', '--out', 'cache.yml'], { cwd: tmp });
    expect(r.status, r.stdout).toBe(1);
    expectOneLineError(r, 'TARGET_NOT_SOURCE');
    expect(r.stderr).toContain(`${cache} is a sluice target`);
    expect(listing(tmp)).toEqual(before);
  });

  test('init of a database holding a _sluice_ table sluice did not make refuses it with NAMESPACE_COLLISION, as enable does, and writes nothing', async ({
    tmp,
  }) => {
    const db = path.join(tmp, 'app.db');
    runSqliteCli(db, 'CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT); CREATE TABLE _sluice_journal (id INTEGER PRIMARY KEY);');
    const before = listing(tmp);
    const [init, enabled] = await Promise.all([
      runCliAsync(['init', 'app.db'], { cwd: tmp }),
      runCliAsync(['enable', 'app.db', 'issues'], { cwd: tmp }),
    ]);
    expect(enabled.status).toBe(1);
    expectOneLineError(enabled, 'NAMESPACE_COLLISION');
    expect(init.status, init.stdout).toBe(1);
    expectOneLineError(init, 'NAMESPACE_COLLISION');
    expect(init.stderr).toContain(db);
    expect(init.stderr).toContain('_sluice_journal');
    expect(listing(tmp)).toEqual(before);
  });

  test('init lists a table enable refuses for its foreign keys (FK_UPDATE_CYCLE) commented out with why, as any table capture refuses, so that plan and a pass capture and mirror the others', async ({
    tmp,
  }) => {
    const db = path.join(tmp, 'app.db');
    runSqliteCli(
      db,
      'CREATE TABLE node (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES node(id) ON UPDATE CASCADE); CREATE TABLE other (id INTEGER PRIMARY KEY, v TEXT);',
    );
    const made = writeInitFile(db, path.join(tmp, 'sluice.yml'));
    expect(made.tables).toEqual(['other']);
    expect(made.skipped.map((s) => [s.table, s.code])).toEqual([['node', 'FK_UPDATE_CYCLE']]);
    expect(fs.readFileSync(made.out, 'utf8')).toContain('# - node   # cannot be captured: FK_UPDATE_CYCLE: Table node: ');
    const p = await loadPipeline(made.out, {});
    const plan = await planPipeline(p);
    expect(plan.sources[0]?.enableRefused).toEqual([]);
    expect(plan.sources[0]?.enable.map((e) => e.table)).toEqual(['other']);
    expect(plan.targets[0]?.projections.map((x) => [x.name, x.does])).toEqual([['other', 'build']]);
    const report = await convergeOnce(p);
    expect(report.sources[0]?.error).toBeNull();
    expect(report.targets[0]?.sync?.projections.map((x) => [x.name, x.state])).toEqual([['other', 'active']]);
  });

  test.skipIf(process.platform === 'win32')(
    'a path in the file is relative to its folder, or absolute when the two share no folder but the root',
    () => {
      expect(written('/srv/app', '/srv/app/app.db')).toBe('app.db');
      expect(written('/srv/app/conf', '/srv/app/data/app.db')).toBe('../data/app.db');
      expect(written('/etc/sluice', '/srv/app/data/app.db')).toBe('/srv/app/data/app.db');
      expect(written('/etc', '/srv/app.db')).toBe('/srv/app.db');
    },
  );
});
