// sluice run keeps every other projection and target going while one is broken or building
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { runCli, scalar, type Spawned } from '../../cli/support/cli.ts';
import { loadPipeline, planPipeline } from '../../../src/pipeline/index.ts';
import { readTables } from '../../../src/capture/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { appSource, freePort, healthz, kill, put, py, startRun, waitFor, waitForRun, waitHealth, runAppPipeline } from '../support/run.ts';

/*
 * Isolation in `sluice run` (issue 21, item 2): a projection broken by
 * another program's DDL turns /healthz 503 naming it while the others keep
 * applying; and a target held in a long first build (here a custom handler
 * that spins, synchronously, until the test lets it go: better-sqlite3 and
 * a handler both block their thread) neither freezes /healthz, which says
 * `building` with 503, nor keeps another target from applying.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

/**
 * Waits until target `bad` has failed twice and is retrying, and target
 * `good` is past its first build (on a loaded machine the retries can come
 * first); returns that /healthz reading.
 */
function retriedBeside(port: number, bad: string, good: string): ReturnType<typeof waitHealth> {
  return waitHealth(
    port,
    `${bad} retried, ${good} running`,
    (h) =>
      h.status.run.parts.some((p) => p.name === bad && p.state === 'retrying' && (p.failure?.attempts ?? 0) >= 2) &&
      h.status.run.parts.some((p) => p.name === good && p.state !== 'starting'),
  );
}

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('DDL by another program that breaks one projection turns /healthz 503 naming it within seconds, and the other projections keep applying', async ({
    tmp,
  }) => {
    const { src, tgt, port, run } = await runAppPipeline(tmp);
    running = run;

    // Another program renames the column the map reads.
    py(
      src,
      `con.execute("ALTER TABLE issues RENAME COLUMN title TO headline")
con.execute("UPDATE issues SET headline = 'after the rename' WHERE id = 2")`,
    );
    const broken = await waitHealth(
      port,
      'open_issues reported',
      (h) => h.status.targets[0]?.projections.some((p) => p.name === 'open_issues' && p.needsAction) === true,
      10_000, // within seconds
    );
    expect(broken.code).toBe(503);
    expect(broken.status.ok).toBe(false);
    expect(broken.status.problems.some((p) => p.includes('open_issues'))).toBe(true);
    // comments is untouched by the rename. The mirror of issues is rebuilt over the new column (below): on a loaded
    // machine /healthz can read it mid-way, so it is asked once that rebuild is done.
    const needs = (h: typeof broken, name: string) => h.status.targets[0]?.projections.find((p) => p.name === name)?.needsAction;
    expect(needs(broken, 'comments')).toBe(false);
    // The others keep applying.
    py(
      src,
      `con.execute("INSERT INTO comments VALUES (5000, 1, 'written after the rename')")
con.execute("UPDATE issues SET headline = 'again' WHERE id = 3")`,
    );
    await waitForRun(
      run,
      'the comment applied',
      () => scalar(tgt, 'SELECT body FROM comments WHERE id = 5000') === 'written after the rename',
    );
    await waitForRun(
      run,
      'the issues mirror rebuilt over the new column',
      () => scalar(tgt, 'SELECT headline FROM issues WHERE id = 3') === 'again',
    );
    // Then only the broken projection needs action: /healthz stays 503 naming it, and the others are fine.
    const after = await waitHealth(port, 'issues current again', (h) => needs(h, 'issues') === false);
    expect(after.code).toBe(503);
    expect([needs(after, 'open_issues'), needs(after, 'comments'), needs(after, 'issues')]).toEqual([true, false, false]);
  });

  test('while one target is held in its first build, /healthz answers 503 with that target building and another target keeps applying', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const small = path.join(tmp, 'small.db');
    const config = path.join(tmp, 'sluice.yml');
    const release = path.join(tmp, 'release');
    appSource(src);
    // A handler whose first build spins until the test creates `release`: its thread does nothing else meanwhile.
    put(
      path.join(tmp, 'slow.mjs'),
      `import fs from 'node:fs';
export default {
  version: '1',
  async init(rows, { db, tables }) {
    await db.schema.createTable(tables.slow_counts).ifNotExists().addColumn('id', 'integer', (c) => c.primaryKey()).execute();
    while (!fs.existsSync(${JSON.stringify(release)})) { /* spin */ }
    for (const row of rows) await db.insertInto(tables.slow_counts).values({ id: row.id }).execute();
  },
  async apply(event, { db, tables }) {
    if (event.before !== null) await db.deleteFrom(tables.slow_counts).where('id', '=', event.before.id).execute();
    if (event.after !== null) await db.insertInto(tables.slow_counts).values({ id: event.after.id }).execute();
  },
};
`,
    );
    const port = await freePort();
    put(
      config,
      `sources:
  - path: app.db
    capture: [issues, comments]
    targets:
      - path: big.db
        projections: [{name: slow, source: comments, kind: custom, module: ./slow.mjs, tables: [slow_counts]}]
      - path: small.db
        projections: ["*"]
listen: 127.0.0.1:${port}
`,
    );
    running = startRun(config);
    await waitFor('small.db built', () => scalar(small, 'SELECT count(*) FROM issues') === 50n);
    const during = await waitHealth(port, 'big.db building', (h) =>
      h.status.run.parts.some((p) => p.kind === 'target' && p.name.endsWith('big.db') && p.phase === 'building'),
    );
    expect(during.code).toBe(503);
    expect(during.status.ok).toBe(false);

    // Another target applies while the build spins.
    py(src, `con.execute("UPDATE issues SET title = 'during the build' WHERE id = 9")`);
    await waitFor('small.db applied the write', () => scalar(small, 'SELECT title FROM issues WHERE id = 9') === 'during the build');
    const still = await healthz(port);
    expect(still.code).toBe(503);
    expect(still.status.run.parts.find((p) => p.name.endsWith('big.db'))?.phase).toBe('building');
    expect(still.status.problems.some((p) => p.includes('big.db') && p.includes('building'))).toBe(true);

    fs.writeFileSync(release, '');
    const done = await waitHealth(port, 'the build done', (h) => h.code === 200);
    expect(done.status.run.parts.every((p) => p.state === 'running')).toBe(true);
    expect(scalar(path.join(tmp, 'big.db'), 'SELECT count(*) FROM slow_counts')).toBe(150n);
  });
  test('a target that fails to open is recorded in its part and retried with backoff while the other target applies, and recovers once its cause is gone', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const bad = path.join(tmp, 'bad.db');
    const good = path.join(tmp, 'good.db');
    const config = path.join(tmp, 'sluice.yml');
    appSource(src);
    fs.writeFileSync(bad, 'this file is not a database, whatever its name says, and sluice must not write it'.repeat(4));
    const port = await freePort();
    put(
      config,
      `sources:\n  - path: app.db\n    capture: [issues, comments]\n    targets:\n      - {path: bad.db, projections: ["*"]}\n      - {path: good.db, projections: ["*"]}\nlisten: 127.0.0.1:${port}\n`,
    );
    running = startRun(config);
    const failing = await retriedBeside(port, bad, good);
    expect(failing.code).toBe(503);
    const part = failing.status.run.parts.find((p) => p.name === bad);
    expect(part?.failure?.code).toBe('NOT_A_DATABASE');
    expect(part?.failure?.retryMs).toBeGreaterThan(part?.failure?.ms ?? Infinity);
    expect(failing.status.run.parts.find((p) => p.name === good)?.state).toBe('running');
    py(src, `con.execute("UPDATE issues SET title = 'beside a failing target' WHERE id = 4")`);
    await waitFor('good.db applied the write', () => scalar(good, 'SELECT title FROM issues WHERE id = 4') === 'beside a failing target');

    fs.rmSync(bad);
    const back = await waitHealth(port, 'bad.db built once its file is gone', (h) => h.code === 200);
    expect(back.status.run.parts.find((p) => p.name === bad)).toMatchObject({ state: 'running', failure: null });
    expect(scalar(bad, 'SELECT title FROM issues WHERE id = 4')).toBe('beside a failing target');
  });
  test('a target whose folder cannot be made (a file in its path) fails its own part, retried, while the other target runs; it is built once the file is gone', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const good = path.join(tmp, 'good.db');
    const config = path.join(tmp, 'sluice.yml');
    appSource(src);
    fs.writeFileSync(path.join(tmp, 'disk'), 'a file where the target expects a folder\n');
    const bad = path.join(tmp, 'disk', 'cache', 'bad.db');
    const port = await freePort();
    put(
      config,
      `sources:\n  - path: app.db\n    capture: [issues]\n    targets:\n      - {path: disk/cache/bad.db, projections: ["*"]}\n      - {path: good.db, projections: ["*"]}\nlisten: 127.0.0.1:${port}\n`,
    );
    running = startRun(config);
    const failing = await retriedBeside(port, bad, good);
    const part = failing.status.run.parts.find((p) => p.name === bad);
    expect(part?.failure?.code).toBe('DB_NOT_WRITABLE');
    expect(part?.failure?.message).toContain(`${path.join(tmp, 'disk')} is a file, not a folder`);
    expect(failing.status.run.parts.find((p) => p.name === good)?.state).toBe('running');
    expect(scalar(good, 'SELECT count(*) FROM issues')).toBe(50n);

    fs.rmSync(path.join(tmp, 'disk'));
    const back = await waitHealth(port, 'bad.db built once the file is gone', (h) => h.code === 200);
    expect(back.status.run.parts.find((p) => p.name === bad)).toMatchObject({ state: 'running', failure: null });
    expect(scalar(bad, 'SELECT count(*) FROM issues')).toBe(50n);
  });

  test('a declared table whose capture enable refuses (FK_UPDATE_CYCLE) fails the capture part, retried, naming it and the fix, while every other declared table (one of its own enable call too) is captured and mirrored, as plan and health --config say', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const tgt = path.join(tmp, 'cache.db');
    const config = path.join(tmp, 'sluice.yml');
    py(
      src,
      `con.execute("CREATE TABLE p (id INTEGER PRIMARY KEY, code TEXT UNIQUE, parent_code TEXT REFERENCES p(code) ON UPDATE CASCADE)")
con.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY, v TEXT, secret TEXT)")
con.execute("CREATE TABLE tags (id INTEGER PRIMARY KEY, name TEXT)")
con.execute("INSERT INTO notes VALUES (1, 'a', 's')")
con.execute("INSERT INTO tags VALUES (1, 't')")`,
    );
    const port = await freePort();
    // p and tags are one enable call (images, no exclude), notes one of its own (its exclude): p's refusal keeps tags from nothing.
    put(
      config,
      `sources:\n  - path: app.db\n    capture:\n      p: images\n      tags: images\n      notes: {exclude: [secret]}\n    targets:\n      - {path: cache.db, projections: ["*"]}\nlisten: 127.0.0.1:${port}\n`,
    );
    const plan = await planPipeline(await loadPipeline(config, {}));
    expect(plan.sources[0]?.enable.map((e) => e.table)).toEqual(['tags', 'notes']);
    expect(plan.sources[0]?.enableRefused.map((r) => [r.tables, r.code])).toEqual([[['p'], 'FK_UPDATE_CYCLE']]);
    expect(plan.targets[0]?.refused).toBeNull();
    expect(plan.targets[0]?.projections.map((x) => [x.name, x.does]).sort()).toEqual([
      ['notes', 'build'],
      ['tags', 'build'],
    ]);
    const fix = plan.sources[0]?.enableRefused[0]?.fix ?? '';
    expect(fix).not.toBe('');
    // health --config names the refused table with enable's fix, not "sluice run captures it".
    const before = runCli(['health', '--config', config]);
    expect(before.status).toBe(3);
    expect(before.stdout).toContain(`table p of ${src} is declared`);
    expect(before.stdout).toContain('FK_UPDATE_CYCLE');
    expect(before.stdout).not.toMatch(/table p of .* sluice run captures it/);

    running = startRun(config);
    const h = await waitHealth(
      port,
      'the capture part retried, tags and notes mirrored',
      (x) =>
        x.status.run.parts.some((p) => p.name === src && p.state === 'retrying' && (p.failure?.attempts ?? 0) >= 2) &&
        x.status.run.parts.some((p) => p.name === tgt && p.state === 'running'),
    );
    const part = h.status.run.parts.find((p) => p.name === src);
    expect(part?.failure?.code).toBe('FK_UPDATE_CYCLE');
    expect(part?.failure?.message).toContain('capture of p is refused: FK_UPDATE_CYCLE');
    expect(part?.failure?.message).not.toContain('tags');
    const said = h.status.problems.find((x) => x.startsWith(`table p of ${src}`));
    expect(said).toContain('FK_UPDATE_CYCLE');
    expect(said).toContain(fix.replace(/\.$/, ''));
    await waitForRun(running, 'the mirrors of notes and tags', () => {
      try {
        return scalar(tgt, 'SELECT v FROM notes') === 'a' && scalar(tgt, 'SELECT name FROM tags') === 't';
      } catch {
        return false;
      }
    });
    expect(listCaptured(src).sort()).toEqual([
      ['notes', 'images', ['secret']],
      ['tags', 'images', []],
    ]);
  });
});

/** The tables `src` captures: name, mode, the columns left out. */
function listCaptured(src: string): [string, string, readonly string[]][] {
  const db = openDatabase(src, { readonly: true });
  try {
    return readTables(db).map((t) => [t.name, t.mode, t.excluded]);
  } finally {
    db.close();
  }
}
