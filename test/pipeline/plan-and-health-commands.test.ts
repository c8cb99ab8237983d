// sluice plan and health config read the pipeline file write nothing and health exits 3 until it is reached
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { describe, expect, PYTHON, runCli, test, filesIn } from '../support/fixtures.ts';
import { convergeOnce, loadPipeline } from '../../src/pipeline/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { pipelineHealthOutput, planOutput } from '../../src/cli/index.ts';

/*
 * `sluice plan` and `sluice health --config` as a user meets them: both read
 * the pipeline file (plan from ./sluice.yml by default) and write nothing,
 * not even the -wal and -shm a reader of a WAL file leaves, and a missing
 * target is not made; health exits 3 while anything declared is missing or
 * undeclared, and 0 once a converging pass has built it.
 */

const SCHEMA = `
CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER NOT NULL);
INSERT INTO items VALUES (1, 'apple pie', 1), (2, 'banana bread', 5);
CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT);
`;

const YML = `sources:
  - path: app.db
    capture: [items]
    targets:
      - path: cache.db
        projections: ["*", {name: cheap, source: items, kind: map, columns: {id: id, label: name}, filter: "qty < 100"}]
`;

describe('sluice plan and sluice health --config', () => {
  test('read the file, write nothing, and health exits 3 until a converging pass has built what it declares', async ({ tmp, makeDb }) => {
    makeDb('app.db', SCHEMA).db.close();
    const file = path.join(tmp, 'sluice.yml');
    fs.writeFileSync(file, YML);
    expect(fs.readFileSync(path.join(tmp, 'app.db')).readUInt8(18), 'the source is in WAL mode').toBe(2);

    const before = filesIn(tmp);
    const plan = runCli(['plan', '--json'], { cwd: tmp });
    expect(plan.stderr).toBe('');
    expect(plan.status).toBe(0);
    const p = planOutput.parse(JSON.parse(plan.stdout));
    expect(p.converged).toBe(false);
    expect(p.sources[0]?.enable).toEqual([{ table: 'items', mode: 'images', from: null }]);
    expect(p.targets[0]?.exists).toBe(false);
    expect(p.targets[0]?.projections.map((x) => [x.name, x.does]).sort()).toEqual([
      ['cheap', 'build'],
      ['items', 'build'],
    ]);
    const human = runCli(['plan', '--config', file]);
    expect(human.status).toBe(0);
    expect(human.stdout).toMatch(/enable items \(images\)/);
    expect(human.stdout).toMatch(/target .*cache\.db \(does not exist: built\)\n {2}build/);

    const sick = runCli(['health', '--config', file, '--json']);
    expect(sick.status).toBe(3);
    const h = pipelineHealthOutput.parse(JSON.parse(sick.stdout));
    expect(h.ok).toBe(false);
    expect(h.problems.join('\n')).toMatch(/table items of .*app\.db is declared .* but not captured: sluice run captures it/);
    expect(h.problems.join('\n')).toMatch(/target .*cache\.db is declared .* but does not exist: sluice run builds it/);
    expect(filesIn(tmp), 'plan and health changed no file and made none (no target, no -wal, no -shm)').toEqual(before);

    await convergeOnce(await loadPipeline(file));
    fs.writeFileSync(path.join(tmp, 'notes.sql'), ''); // a file of the folder that is not the pipeline's: left alone too
    const after = filesIn(tmp);
    expect(Object.keys(after).some((f) => /-(wal|shm)$/.test(f))).toBe(false);
    const well = runCli(['health', '--config', file]);
    expect(well.stderr).toBe('');
    expect(well.status).toBe(0);
    expect(well.stdout).toMatch(/^ok source .*app\.db/m);
    expect(well.stdout).toMatch(/^ok target .*cache\.db/m);
    const again = runCli(['plan', '--config', file]);
    expect(again.stdout).toMatch(/nothing to do/);
    expect(filesIn(tmp), 'health and plan of a converged pipeline write nothing either').toEqual(after);

    // A -wal and -shm that another reader left (or another process holds) are not plan's to remove.
    const reader = openDatabase(path.join(tmp, 'cache.db'), { readonly: true });
    reader.prepare('SELECT count(*) FROM sqlite_schema').get();
    reader.close();
    const left = fs.readdirSync(tmp).sort();
    expect(left).toContain('cache.db-wal');
    expect(runCli(['plan', '--config', file]).status).toBe(0);
    expect(fs.readdirSync(tmp).sort()).toEqual(left);
  });

  test('health --config exits 3 while a held projection is built from another definition than the file declares, or the declared one is refused, as plan says', async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', SCHEMA).db.close();
    const file = path.join(tmp, 'sluice.yml');
    fs.writeFileSync(file, YML);
    await convergeOnce(await loadPipeline(file));
    expect(runCli(['health', '--config', file]).status).toBe(0);
    const changed = (filter: string) => fs.writeFileSync(file, YML.replace('filter: "qty < 100"', `filter: "${filter}"`));
    for (const [filter, does, said] of [
      ['qty < 3', 'rebuild', /cheap is held as built from another definition than the file declares \(DEFINITION_CHANGED\)/],
      ['qtty < 3', 'refuse', /definitions for target .*cache\.db are refused \(projection cheap\): BAD_EXPRESSION: .*no such column: qtty/],
    ] as const) {
      changed(filter);
      const plan = planOutput.parse(JSON.parse(runCli(['plan', '--config', file, '--json']).stdout));
      expect(plan.targets[0]?.projections.find((x) => x.name === 'cheap')?.does, filter).toBe(does);
      const h = runCli(['health', '--config', file, '--json']);
      expect(h.status, filter).toBe(3);
      expect(pipelineHealthOutput.parse(JSON.parse(h.stdout)).problems.join('\n')).toMatch(said);
    }
    changed('qty < 100');
    expect(runCli(['health', '--config', file]).status, 'the file as built again: ok').toBe(0);
    changed('qty < 3');
    await convergeOnce(await loadPipeline(file));
    expect(runCli(['health', '--config', file]).status, 'rebuilt as declared: ok').toBe(0);
  });

  test('health --config exits 3 while a mirror "*" declares is missing from a target that holds others (sluice drop removed it), until a pass builds it again', async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', SCHEMA).db.close();
    const file = path.join(tmp, 'sluice.yml');
    fs.writeFileSync(file, YML.replace('capture: [items]', 'capture: [items, notes]'));
    await convergeOnce(await loadPipeline(file));
    expect(runCli(['health', '--config', file]).status).toBe(0);
    const dropped = runCli(['drop', path.join(tmp, 'cache.db'), 'notes']);
    expect(dropped.status, dropped.stderr).toBe(0);
    const h = runCli(['health', '--config', file, '--json']);
    expect(h.status).toBe(3);
    expect(pipelineHealthOutput.parse(JSON.parse(h.stdout)).problems.join('\n')).toMatch(/projection notes is declared and not built yet/);
    await convergeOnce(await loadPipeline(file));
    expect(runCli(['health', '--config', file]).status, 'built again by the pass').toBe(0);
  });

  test('health --config exits 3 naming a declared table another program dropped from the source, and reports the rest, instead of refusing the file with exit 1', async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', SCHEMA).db.close();
    const file = path.join(tmp, 'sluice.yml');
    fs.writeFileSync(file, YML.replace('capture: [items]', 'capture: [items, notes]'));
    await convergeOnce(await loadPipeline(file));
    expect(runCli(['health', '--config', file]).status).toBe(0);
    const drop = spawnSync(PYTHON, [
      '-c',
      'import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.execute("DROP TABLE notes"); c.commit()',
      path.join(tmp, 'app.db'),
    ]);
    expect(drop.status, drop.stderr.toString()).toBe(0);
    const h = runCli(['health', '--config', file, '--json']);
    expect(h.status, h.stderr).toBe(3);
    const out = pipelineHealthOutput.parse(JSON.parse(h.stdout));
    expect(out.problems.join('\n')).toMatch(
      /table notes of .*app\.db is declared \(.*sluice\.yml:\d+:\d+\) but the source does not hold it/,
    );
    expect(out.targets[0]?.projections.find((p) => p.name === 'items')?.state, 'the other projections are reported as they are').toBe(
      'active',
    );
  });

  test("health --config reports a declared target that is not a database as that target's problem, exit 3, and the other targets as they are", async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', SCHEMA).db.close();
    const file = path.join(tmp, 'sluice.yml');
    fs.writeFileSync(
      file,
      YML.replace('        projections: ["*"', '        projections: ["*"]\n      - path: junk.db\n        projections: ["*"'),
    );
    await convergeOnce(await loadPipeline(file)).catch(() => undefined);
    fs.rmSync(path.join(tmp, 'junk.db'), { force: true });
    fs.writeFileSync(path.join(tmp, 'junk.db'), 'not a database at all, '.repeat(20));
    const h = runCli(['health', '--config', file, '--json']);
    expect(h.status, h.stderr).toBe(3);
    const out = pipelineHealthOutput.parse(JSON.parse(h.stdout));
    expect(out.targets.map((t) => [path.basename(t.path), t.ok])).toEqual([
      ['cache.db', true],
      ['junk.db', false],
    ]);
    expect(out.problems.join('\n')).toMatch(/target .*junk\.db cannot be read/);
  });

  test('plan and health --config leave a hot journal and its database as they are, and say which file needs a writer to roll it back', ({
    tmp,
  }) => {
    fs.writeFileSync(path.join(tmp, 'sluice.yml'), YML);
    // An app in rollback-journal mode killed in the middle of a transaction that had spilled to the file: a hot journal.
    const app = spawnSync(
      PYTHON,
      [
        '-c',
        `import sqlite3, os
c = sqlite3.connect('app.db', isolation_level=None)
c.execute('PRAGMA journal_mode = delete')
c.execute('CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, qty INTEGER NOT NULL)')
c.execute('PRAGMA cache_size = 1')
c.execute('BEGIN')
for i in range(2000): c.execute('INSERT INTO items (name, qty) VALUES (?, 1)', ('x' * 500,))
os._exit(9)`,
      ],
      { cwd: tmp, encoding: 'utf8' },
    );
    expect(app.status, app.stderr).toBe(9);
    const before = filesIn(tmp);
    expect(Object.keys(before)).toEqual(['app.db', 'app.db-journal', 'sluice.yml']);
    for (const args of [['plan'], ['health', '--config', 'sluice.yml']]) {
      const r = runCli(args, { cwd: tmp });
      expect(filesIn(tmp), `${args[0]} rolled the journal back`).toEqual(before);
      expect(r.status, r.stderr).toBe(1);
      expect(r.stderr).toMatch(/^sluice: DB_OPEN_FAILED: .*app\.db-journal is a hot journal.*rolls it back/);
      expect(r.stderr.trim().split('\n')).toHaveLength(1);
    }
  });

  test('plan refuses a definition that names its table in another case than the source does, since sync matches the name exactly and would refuse it at every pass', async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', 'CREATE TABLE Items (id INTEGER PRIMARY KEY, name TEXT);').db.close();
    fs.writeFileSync(
      path.join(tmp, 'sluice.yml'),
      `sources:\n  - path: app.db\n    capture: [items]\n    targets:\n      - path: cache.db\n        projections: [{name: labels, source: items, kind: map, columns: {id: id, label: name}}]\n`,
    );
    const before = filesIn(tmp);
    const r = runCli(['plan'], { cwd: tmp });
    expect(r.stdout).not.toMatch(/build labels/);
    expect(r.status, r.stdout).toBe(1);
    expect(r.stderr).toMatch(
      /^sluice: PIPELINE_INVALID: .*sluice\.yml:6:23: projection labels reads table items, which source .*app\.db names Items/,
    );
    expect(filesIn(tmp)).toEqual(before);
  });

  test('plan and health --config refuse a source that is a sluice target with TARGET_NOT_SOURCE and its line, instead of predicting its capture', async ({
    tmp,
    makeDb,
  }) => {
    makeDb('app.db', SCHEMA).db.close();
    fs.writeFileSync(path.join(tmp, 'sluice.yml'), YML);
    await convergeOnce(await loadPipeline(path.join(tmp, 'sluice.yml')));
    fs.writeFileSync(
      path.join(tmp, 'again.yml'),
      `sources:\n  - path: cache.db\n    capture: [items]\n    targets:\n      - path: again.db\n        projections: ["*"]\n`,
    );
    const before = filesIn(tmp);
    for (const args of [
      ['plan', '--config', 'again.yml'],
      ['health', '--config', 'again.yml'],
    ]) {
      const r = runCli(args, { cwd: tmp });
      expect(r.stdout, args[0]).not.toMatch(/enable items/);
      expect(r.status, r.stdout).toBe(1);
      expect(r.stderr).toMatch(/^sluice: TARGET_NOT_SOURCE: .*again\.yml:2:5: .*cache\.db is a sluice target/);
      expect(filesIn(tmp)).toEqual(before);
    }
  });

  test('health --config reports a subscribed target that is not a database (a folder, a text file) as needing action, exit 3, as it does a synced one', ({
    tmp,
  }) => {
    fs.writeFileSync(
      path.join(tmp, 'sluice.yml'),
      'subscribe:\n  - {nats: "nats://127.0.0.1:4222", source: abc, path: folder.db}\n  - {nats: "nats://127.0.0.1:4222", source: abc, path: text.db}\n',
    );
    fs.mkdirSync(path.join(tmp, 'folder.db'));
    fs.writeFileSync(path.join(tmp, 'text.db'), 'not a database, only text, long enough to be read as a header and refused '.repeat(3));
    const r = runCli(['health', '--config', 'sluice.yml', '--json'], { cwd: tmp });
    expect(r.status, r.stderr).toBe(3);
    const out = pipelineHealthOutput.parse(JSON.parse(r.stdout));
    expect(out.targets.map((t) => [path.basename(t.path), t.ok, t.problems.join(' ')])).toEqual([
      ['folder.db', false, expect.stringMatching(/cannot be read: NOT_A_DATABASE/)],
      ['text.db', false, expect.stringMatching(/cannot be read: NOT_A_DATABASE/)],
    ]);
  });

  test('health --config refuses a target or lag options beside it, and a missing pipeline file exits 1', ({ tmp }) => {
    const r = runCli(['health', 'cache.db', '--config', 'sluice.yml'], { cwd: tmp });
    expect(r.status, 'a usage error').toBe(2);
    expect(r.stderr).toMatch(/--config checks every target of the pipeline file/);
    const missing = runCli(['plan'], { cwd: tmp });
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/PIPELINE_INVALID: Pipeline file sluice\.yml cannot be read/);
    expect(fs.readdirSync(tmp)).toEqual([]);
  });
});
