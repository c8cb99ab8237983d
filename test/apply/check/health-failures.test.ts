// health exits 3 for a failing sync an unreadable source a changed table or lag past a threshold
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe, ROOT } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { enable, prune } from '../../../src/capture/index.ts';
import {
  runCliAsync,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  write,
  scalar,
  sha256,
  sourceSeq,
  onDatabase,
} from '../../cli/support/cli.ts';

let dirs: string[] = [];
afterEach(() => {
  for (const d of dirs) removeDir(d);
  dirs = [];
});

/** A source capturing issues and comments, and a target synced from it. */
async function setup(options: { retention?: number } = {}) {
  const dir = makeDir();
  dirs.push(dir);
  const src = trackerSource(path.join(dir, 'app.db'), []);
  const db = openDatabase(src);
  try {
    enable(db, ['issues', 'comments'], options.retention === undefined ? {} : { retention: options.retention });
  } finally {
    db.close();
  }
  const tgt = path.join(dir, 'cache.db');
  await sync(src, tgt);
  return { dir, src, tgt };
}

async function health(tgt: string, ...flags: string[]) {
  const r = await runCliAsync(['health', tgt, '--json', ...flags]);
  const h = parseJson(r, S.healthOutput);
  return { status: r.status, h, byName: Object.fromEntries(h.projections.map((p) => [p.name, p])) };
}

/** A user trigger on a target table that makes every apply to it fail with a raw SQLite error. */
const BLOCK = "CREATE TRIGGER block_issues BEFORE INSERT ON issues BEGIN SELECT RAISE(ABORT, 'issues are frozen'); END";

describe('health needs action (exit 3)', () => {
  test('for a sync that keeps failing: the code, message, time and consecutive count of its failures, until a sync succeeds', async () => {
    const { src, tgt } = await setup();
    write(tgt, BLOCK);
    write(src, "UPDATE issues SET title = 'x' WHERE number = 1");
    const before = Date.now();
    for (let i = 0; i < 2; i++) expect((await runCliAsync(['sync', src, tgt])).status).not.toBe(0);
    const { status, h, byName } = await health(tgt);
    expect(status).toBe(3);
    expect(h.ok).toBe(false);
    expect(byName.issues).toMatchObject({ state: 'active', needsAction: true, lastError: expect.stringMatching(/issues are frozen/) });
    expect(byName.issues?.failure).toMatchObject({
      code: 'SQLITE_CONSTRAINT_TRIGGER',
      message: expect.stringMatching(/issues are frozen/),
      consecutive: 2,
    });
    expect(byName.issues?.failure?.ms).toBeGreaterThanOrEqual(before);
    expect(byName.issues?.action).toMatch(/2 consecutive.*SQLITE_CONSTRAINT_TRIGGER.*issues are frozen/);
    expect(byName.comments).toMatchObject({ needsAction: false, failure: null });

    write(tgt, 'DROP TRIGGER block_issues');
    expect((await runCliAsync(['sync', src, tgt])).status).toBe(0);
    const after = await health(tgt);
    expect(after.status).toBe(0);
    expect(after.byName.issues).toMatchObject({ needsAction: false, failure: null, lastError: null });
  });

  test('for a cursor below the pruned horizon: the rebuild the next sync does by itself (no action, exit 0), and its lag in events stays right after pruning', async () => {
    const { src, tgt } = await setup({ retention: 1024 });
    const key = scalar(src, 'SELECT repo_id FROM issues WHERE number = 1 LIMIT 1');
    write(
      src,
      Array.from({ length: 1100 }, (_, i) => `UPDATE issues SET score = ${i} WHERE repo_id = ${String(key)} AND number = 1;`).join('\n'),
    );
    // Writers prune as they go; prune (the library's, which the CLI runs) then deletes the rest past the retention.
    onDatabase(src, (db) => prune(db));
    expect(Number(scalar(src, 'SELECT pruned_through FROM _sluice_state'))).toBeGreaterThan(0);

    const { status, byName } = await health(tgt);
    expect(status).toBe(0);
    expect(byName.issues).toMatchObject({
      needsAction: false,
      rebuild: 'CURSOR_PRUNED',
      seq: 0,
      sourceSeq: sourceSeq(src),
      lagEvents: 1100,
      problems: [],
    });
    expect(byName.issues?.lagMs).toBeGreaterThanOrEqual(0);
    // A lag threshold is what makes so far behind a problem.
    const past = await health(tgt, '--max-lag-events', '1000');
    expect(past.status).toBe(3);
    expect(past.byName.issues?.action).toMatch(/lag of 1100 events is past --max-lag-events 1000/);
  });

  test('for a source that cannot be opened or read, with its path and the cause', async () => {
    const { src, tgt } = await setup();
    const missing = `${src}.gone`;
    fs.renameSync(src, missing);
    for (const suffix of ['-wal', '-shm']) fs.rmSync(`${src}${suffix}`, { force: true });
    const gone = await health(tgt);
    expect(gone.status).toBe(3);
    expect(gone.byName.issues).toMatchObject({ needsAction: true, sourceSeq: null, lagEvents: null });
    expect(gone.byName.issues?.action).toContain(src);
    expect(gone.byName.issues?.action).toMatch(/does not exist/);

    fs.writeFileSync(src, 'this is not a database, it is a text file of some length '.repeat(100));
    const garbage = await health(tgt);
    expect(garbage.status).toBe(3);
    expect(garbage.byName.comments?.action).toContain(src);
    expect(garbage.byName.comments?.action).toMatch(/not a SQLite database/);
  });

  test('for a target table dropped or given other columns by hand', async () => {
    const { tgt } = await setup();
    write(tgt, 'DROP TABLE issues; ALTER TABLE comments ADD COLUMN note TEXT');
    const { status, byName } = await health(tgt);
    expect(status).toBe(3);
    expect(byName.issues?.needsAction).toBe(true);
    expect(byName.issues?.action).toMatch(/table issues.*missing.*sluice reinit \S+ \S+ issues/);
    expect(byName.comments?.needsAction).toBe(true);
    expect(byName.comments?.action).toMatch(/table comments.*columns.*note.*sluice reinit \S+ \S+ comments/);

    // The command it gives repairs both. The first also syncs comments, whose table is still reshaped: it suspends it
    // (exit 3) by the same rule health says it by, until the second rebuilds it.
    for (const [name, exit] of [
      ['issues', 3],
      ['comments', 0],
    ] as const) {
      const command = /sluice (reinit \S+ \S+ \S+)$/.exec(byName[name]?.action ?? '')?.[1] ?? '';
      expect(command).toMatch(new RegExp(` ${name}$`));
      const r = await runCliAsync(command.split(' '));
      expect(r.status, r.stdout + r.stderr).toBe(exit);
      if (exit === 3) expect(r.stdout).toMatch(/comments: SUSPENDED TARGET_TABLE_CHANGED/);
    }
    const after = await health(tgt);
    expect(after.status, JSON.stringify(after.h)).toBe(0);
  });

  test('for lag past --max-lag-events or --max-lag-ms, and not below them', async () => {
    const { src, tgt } = await setup();
    write(src, "UPDATE issues SET title = 'lag' WHERE number <= 2");
    const n = Number(scalar(src, 'SELECT count(*) FROM issues WHERE number <= 2'));
    await new Promise((r) => setTimeout(r, 50));
    const [over, at, slow, fast] = await Promise.all([
      health(tgt, '--max-lag-events', String(n - 1)),
      health(tgt, '--max-lag-events', String(n)),
      health(tgt, '--max-lag-ms', '10'),
      health(tgt, '--max-lag-ms', '3600000'),
    ]);
    expect(over.status).toBe(3);
    expect(over.byName.issues).toMatchObject({ needsAction: true, lagEvents: n });
    expect(over.byName.issues?.action).toMatch(new RegExp(`${n} events.*--max-lag-events ${n - 1}`));
    expect(over.byName.comments?.needsAction).toBe(false);
    expect(at.status).toBe(0);
    expect(slow.status).toBe(3);
    expect(slow.byName.issues?.action).toMatch(/ms.*--max-lag-ms 10/);
    expect(fast.status).toBe(0);
    const bad = await runCliAsync(['health', tgt, '--max-lag-ms', 'soon']);
    expect(bad.status).toBe(2);
  });
});

describe('health only reads', () => {
  test('a target made before failures were recorded is reported as it is, and neither file changes', async () => {
    const { src, tgt } = await setup();
    const db = openDatabase(tgt);
    for (const c of ['last_error_code', 'last_error_ms', 'failures']) {
      if ((db.prepare("SELECT name FROM pragma_table_info('_sluice_projections')").pluck().all() as string[]).includes(c))
        db.exec(`ALTER TABLE _sluice_projections DROP COLUMN ${c}`);
    }
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    db.close();
    write(src, "UPDATE issues SET title = 'z' WHERE number = 3");
    const s = openDatabase(src);
    s.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    s.close();
    const before = [sha256(src), sha256(tgt)];
    const { status, byName } = await health(tgt);
    expect(status).toBe(0);
    expect(byName.issues).toMatchObject({ needsAction: false, failure: null, rebuild: null });
    expect([sha256(src), sha256(tgt)]).toEqual(before);
    expect(scalar(tgt, "SELECT count(*) FROM pragma_table_info('_sluice_projections') WHERE name = 'failures'")).toBe(0n);
  });

  test('the format 1 target in fixtures, made by an older sluice, is reported without a byte of either file changing', async ({ tmp }) => {
    const source = path.join(tmp, 'source.db');
    const target = path.join(tmp, 'target.db');
    fs.copyFileSync(path.join(ROOT, 'fixtures', 'format1', 'source.sqlite'), source);
    fs.copyFileSync(path.join(ROOT, 'fixtures', 'format1', 'target.sqlite'), target);
    const before = [sha256(source), sha256(target)];
    const { h } = await health(target);
    expect(h.projections.map((p) => [p.name, p.kind, p.failure])).toEqual([
      ['notes', 'mirror', null],
      ['notes_fts', 'fts5', null],
      ['users', 'mirror', null],
    ]);
    expect([sha256(source), sha256(target)]).toEqual(before);
    expect(fs.readdirSync(tmp).sort()).toEqual(['source.db', 'target.db']);
  });
});
