// verify never calls ok what it did not check
import fs from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { jsonSchemas as S } from '../../../src/cli/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { enable, prune } from '../../../src/capture/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import {
  runCliAsync,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  write,
  scalar,
  sha256,
  expectOneLineError,
  onDatabase,
  syncByLibrary,
} from '../../cli/support/cli.ts';

let dir: string;
let src: string;
let tgt: string;
const at = (f: string) => path.join(dir, f);

beforeEach(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues', 'labels']);
  tgt = at('cache.db');
  await sync(src, tgt);
});
afterEach(() => removeDir(dir));

const byName = (r: { stdout: string; stderr: string }) =>
  Object.fromEntries(parseJson(r, S.verifyOutput).projections.map((p) => [p.name, p]));

/**
 * Every file of a database by content (main, and a -wal, -shm or -journal
 * beside it, empty or not: verify holds what it reads, so that even a
 * reader of a WAL file leaves none), and its journal mode (read with write
 * access, which as the last connection to a WAL file leaves nothing beside
 * it either).
 */
function snapshot(file: string): { files: Record<string, string>; journalMode: string } {
  const files: Record<string, string> = {};
  for (const suffix of ['', '-wal', '-shm', '-journal']) if (fs.existsSync(file + suffix)) files[suffix] = sha256(file + suffix);
  const db = openDatabase(file);
  try {
    return { files, journalMode: String(db.pragma('journal_mode', { simple: true })) };
  } finally {
    db.close();
  }
}

/** A plain SQLite file in rollback-journal mode that sluice never wrote. */
function plainDatabase(file: string): string {
  const db = openDatabase(file, { create: true });
  try {
    db.exec(
      "PRAGMA journal_mode = DELETE; CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes (body) VALUES ('hello')",
    );
  } finally {
    db.close();
  }
  return file;
}

describe('verify', () => {
  test('a target that holds no projection of the source is an error naming both files, and verify writes nothing to either', async () => {
    const plain = plainDatabase(at('notes.db'));
    const before = { plain: snapshot(plain), src: snapshot(src) };
    const r = await runCliAsync(['verify', src, plain, '--json']);
    expect(r.status).toBe(1);
    expectOneLineError(r, 'NO_PROJECTIONS_OF_SOURCE');
    expect(r.stderr).toContain(plain);
    expect(r.stderr).toContain(src);
    expect(snapshot(plain)).toEqual(before.plain);
    expect(Number(scalar(plain, "SELECT count(*) FROM sqlite_schema WHERE name LIKE '\\_sluice\\_%' ESCAPE '\\'"))).toBe(0);
    expect(snapshot(src)).toEqual(before.src);

    // A target of another source is not a target of this one.
    const other = trackerSource(at('other.db'), ['issues']);
    const cross = await runCliAsync(['verify', other, tgt, '--json']);
    expect(cross.status).toBe(1);
    expectOneLineError(cross, 'NO_PROJECTIONS_OF_SOURCE');
  });

  test('a target in rollback-journal mode keeps its mode and its bytes', async () => {
    const db = openDatabase(tgt);
    db.pragma('journal_mode = DELETE');
    db.close();
    const before = snapshot(tgt);
    expect(before.journalMode).toBe('delete');
    const r = await runCliAsync(['verify', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(snapshot(tgt)).toEqual(before);
  });

  test('a suspended projection is not verified: ok false with its reason and what was skipped, exit 3', async () => {
    write(tgt, "UPDATE _sluice_projections SET state = 'suspended', reason = 'TARGET_DIVERGED' WHERE name = 'issues'");
    const r = await runCliAsync(['verify', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(3);
    const p = byName(r);
    expect(p.issues).toMatchObject({ ok: false, reason: 'TARGET_DIVERGED', checked: 0 });
    expect(p.issues?.skipped).toMatch(/suspended.*sluice reinit \S+ \S+ issues/);
    expect(p.labels?.ok).toBe(true);
    const text = await runCliAsync(['verify', src, tgt]);
    expect(text.stdout).toMatch(/issues: NOT VERIFIED TARGET_DIVERGED/);
  });

  test('a projection whose last sync failed is not verified', async () => {
    write(tgt, "UPDATE _sluice_projections SET last_error = 'handler refuses' WHERE name = 'labels'");
    const r = await runCliAsync(['verify', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(3);
    const p = byName(r);
    expect(p.labels).toMatchObject({ ok: false, reason: 'SYNC_FAILING' });
    expect(p.labels?.skipped).toMatch(/handler refuses/);
  });

  test('keys changed after the cursor are compared as they were at the cursor, so a tampered one is still found', async () => {
    write(
      src,
      "UPDATE labels SET color = x'ff' WHERE repo_id = 1; DELETE FROM labels WHERE repo_id = 2; INSERT INTO labels (repo_id, name, color) VALUES (3, 'later', x'00')",
    );
    const clean = await runCliAsync(['verify', src, tgt, '--json']);
    expect(clean.status, clean.stdout).toBe(0);
    const c = byName(clean);
    expect(c.labels?.inFlight).toBeGreaterThan(0);
    expect(c.labels).toMatchObject({ ok: true, diffs: [] });
    const all = Number(scalar(tgt, 'SELECT count(*) FROM labels'));
    expect(c.labels?.checked).toBe(all); // every key, the changed ones at the cursor

    const [one, two] = [
      scalar(tgt, 'SELECT name FROM labels WHERE repo_id = 1 LIMIT 1'),
      scalar(tgt, 'SELECT name FROM labels WHERE repo_id = 2 LIMIT 1'),
    ];
    write(
      tgt,
      `UPDATE labels SET color = x'ee' WHERE repo_id = 1 AND name = '${String(one)}'; DELETE FROM labels WHERE repo_id = 2 AND name = '${String(two)}'; INSERT INTO labels (repo_id, name, color) VALUES (3, 'later', x'00')`,
    );
    const r = await runCliAsync(['verify', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(3);
    expect(byName(r).labels?.diffs).toEqual(
      expect.arrayContaining([
        { key: [1, one], kind: 'different' },
        { key: [2, two], kind: 'missing' },
        { key: [3, 'later'], kind: 'extra' },
      ]),
    );
  });

  test('keys changed after a cursor the journal no longer reaches make it BEHIND, not ok, until it syncs', async () => {
    // Capture's retention, and the prune past it, through the library (what the CLI runs): verify is the subject.
    onDatabase(src, (db) => enable(db, ['issues', 'labels'], { retention: 1024 }));
    write(
      src,
      "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1100) INSERT INTO labels (repo_id, name, color) SELECT 1, 'bulk-' || i, x'00' FROM n",
    );
    onDatabase(src, (db) => prune(db));
    const r = await runCliAsync(['verify', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(3);
    const p = byName(r);
    expect(p.labels).toMatchObject({ ok: false, reason: 'BEHIND', diffs: [] });
    expect(p.labels?.skipped).toMatch(/pruned through seq .*changed after seq/);
    // The same for issues: what the pruned events touched is gone, whatever the table.
    expect(p.issues).toMatchObject({ ok: false, reason: 'BEHIND' });
    await sync(src, tgt);
    const after = await runCliAsync(['verify', src, tgt, '--json']);
    expect(after.status, after.stdout).toBe(0);
    expect(byName(after).labels).toMatchObject({ ok: true, inFlight: 0 });
  });

  test('events after the cursor that carry no before-images (a table switched to keys mode, and back) are never read as images: not compared, with the reason the next sync acts on', async () => {
    // Keys mode journals keys only. Read with the images layout, an update's
    // new key came from an empty column (verify failed on a NULL key with a
    // raw SQLITE_CONSTRAINT_NOTNULL), and a delete's row at the cursor was its
    // key and NULLs (a false difference, recorded as TARGET_EDITED).
    const captureLabels = (mode: 'keys' | 'images') => {
      const db = openDatabase(src);
      try {
        enable(db, ['labels'], { mode });
      } finally {
        db.close();
      }
    };
    captureLabels('keys');
    write(
      src,
      "UPDATE labels SET color = x'ff' WHERE repo_id = 1; UPDATE labels SET name = name || '-renamed' WHERE repo_id = 2; DELETE FROM labels WHERE repo_id = 3; INSERT INTO labels (repo_id, name, color) VALUES (3, 'later', x'00')",
    );
    const keys = await runCliAsync(['verify', src, tgt, '--json']);
    expect(keys.status, keys.stderr).toBe(3);
    const k = byName(keys);
    expect(k.labels).toMatchObject({ ok: false, reason: 'NEEDS_IMAGES_MODE', checked: 0, diffs: [] });
    expect(k.labels?.skipped).toMatch(/keys mode/);
    expect(k.labels?.repair).toMatch(/--mode images/);
    expect(k.issues).toMatchObject({ ok: true, diffs: [] });
    // Nothing was found to differ, so nothing is recorded as edited: the next sync decides (it suspends, NEEDS_IMAGES_MODE).
    expect(scalar(tgt, "SELECT state FROM _sluice_projections WHERE name = 'labels'")).toBe('active');

    // Back in images mode, the keys-mode events are still after the cursor: the next sync rebuilds (TABLE_REARMED).
    captureLabels('images');
    write(src, "UPDATE labels SET color = x'01' WHERE repo_id = 1");
    const back = (await verify(src, tgt)).projections.find((p) => p.name === 'labels');
    expect(back).toMatchObject({ ok: false, reason: 'TABLE_REARMED', checked: 0, diffs: [] });
    expect(back?.skipped).toMatch(/re-armed .*sluice sync/);
    await sync(src, tgt);
    expect((await verify(src, tgt)).projections.find((p) => p.name === 'labels')).toMatchObject({ ok: true, diffs: [] });
  });

  test('a stored definition that no longer fits the source is not verified, and the others are', async () => {
    fs.writeFileSync(
      at('authors.json'),
      JSON.stringify({
        name: 'authors',
        source: 'issues',
        kind: 'map',
        columns: { repo_id: 'repo_id', number: 'number', author: 'author' },
      }),
    );
    expect(await syncByLibrary(src, tgt, [at('authors.json')])).toBe(0);
    write(src, 'ALTER TABLE issues RENAME COLUMN author TO writer');
    const r = await runCliAsync(['verify', src, tgt, '--json']);
    expect(r.status, r.stderr).toBe(3);
    const p = byName(r);
    expect(p.authors).toMatchObject({ ok: false, reason: 'SOURCE_COLUMN_MISSING' });
    expect(p.labels?.ok).toBe(true);
  });
});
