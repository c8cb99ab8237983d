// every failed sync attempt is recorded with its code time and consecutive count
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, ROOT } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { sync } from '../../../src/apply/sync/index.ts';
import { readProjection } from '../../../src/apply/target/index.ts';
import { makeDir, removeDir, scalar, trackerSource, write } from '../../cli/support/cli.ts';

function record(target: string, name: string) {
  const db = openDatabase(target, { readonly: true });
  try {
    return readProjection(db, 'main', name);
  } finally {
    db.close();
  }
}

function columns(target: string): string[] {
  const db = openDatabase(target, { readonly: true });
  try {
    return db.prepare("SELECT name FROM pragma_table_info('_sluice_projections')").pluck().all() as string[];
  } finally {
    db.close();
  }
}

/** A user trigger on a target table that makes every write to it fail with a raw SQLite error (SQLITE_CONSTRAINT_TRIGGER). */
const BLOCK = "CREATE TRIGGER block_issues BEFORE INSERT ON issues BEGIN SELECT RAISE(ABORT, 'issues are frozen'); END";

describe('a failed sync attempt', () => {
  test('a raw SQLite error is recorded with its code, message and time, counted per consecutive failure, and cleared by the next success', async () => {
    const dir = makeDir();
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['issues', 'comments']);
      const tgt = path.join(dir, 'cache.db');
      await sync(src, tgt);
      write(tgt, BLOCK);
      write(src, "UPDATE issues SET title = 'x' WHERE number = 1");
      const before = Date.now();
      const first = await sync(src, tgt);
      expect(first.projections.find((p) => p.name === 'issues')?.error?.code).toBe('SQLITE_CONSTRAINT_TRIGGER');
      expect(record(tgt, 'issues')).toMatchObject({
        lastError: expect.stringMatching(/issues are frozen/),
        lastErrorCode: 'SQLITE_CONSTRAINT_TRIGGER',
        failures: 1,
      });
      expect(record(tgt, 'issues')?.lastErrorMs).toBeGreaterThanOrEqual(before);
      // The other projection of the run is untouched by it.
      expect(record(tgt, 'comments')).toMatchObject({ lastError: null, lastErrorCode: null, lastErrorMs: null, failures: 0 });

      await sync(src, tgt);
      expect(record(tgt, 'issues')).toMatchObject({ lastErrorCode: 'SQLITE_CONSTRAINT_TRIGGER', failures: 2 });

      write(tgt, 'DROP TRIGGER block_issues');
      const ok = await sync(src, tgt);
      expect(ok.projections.find((p) => p.name === 'issues')?.error).toBeUndefined();
      expect(record(tgt, 'issues')).toMatchObject({
        lastError: null,
        lastErrorCode: null,
        lastErrorMs: null,
        failures: 0,
        state: 'active',
      });
    } finally {
      removeDir(dir);
    }
  });

  test('a target made before failures were recorded gets the new columns at its next sync, and keeps its projections', async () => {
    const dir = makeDir();
    try {
      const src = trackerSource(path.join(dir, 'app.db'), ['issues']);
      const tgt = path.join(dir, 'cache.db');
      await sync(src, tgt);
      // The projections table as the code before this change made it.
      const db = openDatabase(tgt);
      for (const c of ['last_error_code', 'last_error_ms', 'failures']) {
        if (columns(tgt).includes(c)) db.exec(`ALTER TABLE _sluice_projections DROP COLUMN ${c}`);
      }
      db.close();
      expect(columns(tgt)).not.toContain('failures');
      const old = record(tgt, 'issues');
      expect(old).toMatchObject({ failures: 0, lastErrorCode: null });

      write(src, "UPDATE issues SET title = 'y' WHERE number = 2");
      write(tgt, BLOCK);
      await sync(src, tgt);
      expect(columns(tgt)).toEqual(expect.arrayContaining(['last_error', 'last_error_code', 'last_error_ms', 'failures']));
      expect(record(tgt, 'issues')).toMatchObject({ lastErrorCode: 'SQLITE_CONSTRAINT_TRIGGER', failures: 1, cursor: old?.cursor });
      write(tgt, 'DROP TRIGGER block_issues');
      const r = await sync(src, tgt);
      expect(r.projections[0]).toMatchObject({
        state: 'active',
        applied: Number(scalar(src, 'SELECT count(*) FROM issues WHERE number = 2')),
      });
      expect(record(tgt, 'issues')).toMatchObject({ failures: 0, lastErrorCode: null });
    } finally {
      removeDir(dir);
    }
  });

  test('the format 1 target in fixtures, made by an older sluice, gets the columns at its first sync', async ({ tmp }) => {
    const source = path.join(tmp, 'source.db');
    const target = path.join(tmp, 'target.db');
    fs.copyFileSync(path.join(ROOT, 'fixtures', 'format1', 'source.sqlite'), source);
    fs.copyFileSync(path.join(ROOT, 'fixtures', 'format1', 'target.sqlite'), target);
    expect(columns(target)).not.toContain('failures');
    const r = await sync(source, target);
    expect(r.projections.map((p) => [p.name, p.state, p.error])).toEqual([
      ['notes', 'active', undefined],
      ['notes_fts', 'active', undefined],
      ['users', 'active', undefined],
    ]);
    expect(columns(target)).toEqual(expect.arrayContaining(['last_error_code', 'last_error_ms', 'failures']));
    for (const name of ['notes', 'notes_fts', 'users'])
      expect(record(target, name)).toMatchObject({ failures: 0, lastErrorCode: null, lastError: null });
  });
});
