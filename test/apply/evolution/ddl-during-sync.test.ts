// ddl rolled back changes nothing and ddl during a sync lands before a batch or fails it cleanly
import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { test, expect, describe } from '../../support/fixtures.ts';
import { enable, alter } from '../../../src/capture/index.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';
import { Syncer, sync } from '../../../src/apply/sync/index.ts';
import { verify, health } from '../../../src/apply/check/index.ts';
import type { ProjectionDefinitionInput } from '../../../src/projection/index.ts';
import { pythonExec } from '../../support/journal.ts';

/*
 * 003's LC-2 transaction rules on a SQLite source: DDL rolled back inside
 * a transaction leaves the source's schema, triggers, capture tables and
 * journal, and the target's rows and cursors, byte for byte as they were;
 * DDL that lands while a sync runs is either before a batch (which then
 * reads it) or fails that batch with nothing of it written, and the next
 * run classifies the change and ends exact.
 */

const SCHEMA = `CREATE TABLE t (id INTEGER PRIMARY KEY, a TEXT, b TEXT);
INSERT INTO t VALUES (1, 'a1', 'b one'), (2, 'a2', 'b two');`;

const DEFS: ProjectionDefinitionInput[] = [
  { name: 'mirror_t', source: 't', kind: 'mirror' },
  { name: 'map_b', source: 't', kind: 'map', columns: { id: 'id', b: 'b' } },
  { name: 'fts_b', source: 't', kind: 'fts5', columns: ['b'] },
  { name: 'map_a', source: 't', kind: 'map', columns: { id: 'id', a: 'a' } },
];

/** The source as capture sees it: schema (with triggers), capture tables, journal, schema_version. */
function sourceState(db: Db): unknown {
  const all = (sql: string) => db.prepare(sql).raw().all();
  return {
    schema: all('SELECT rowid, type, name, tbl_name, rootpage, sql FROM main.sqlite_schema ORDER BY rowid'),
    tables: all('SELECT * FROM _sluice_tables ORDER BY tid'),
    state: all('SELECT * FROM _sluice_state'),
    journal: all('SELECT * FROM _sluice_journal ORDER BY seq'),
    rows: all('SELECT * FROM t ORDER BY id'),
    version: db.pragma('schema_version', { simple: true }),
  };
}

const sha = (f: string) => createHash('sha256').update(fs.readFileSync(f)).digest('hex');

/** The target checkpointed and closed, then its main file's digest. */
function targetBytes(file: string): string {
  const db = openDatabase(file);
  try {
    db.pragma('wal_checkpoint(TRUNCATE)');
  } finally {
    db.close();
  }
  return sha(file);
}

describe('DDL and a sync', () => {
  test('test_schema_evolution_transactional_ddl_rollback: DDL rolled back in the app (better-sqlite3 and Python) or by a failing sluice alter leaves the source, the journal, the target and every cursor byte for byte as they were', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('app.db', SCHEMA);
    enable(db, ['t']);
    const target = path.join(tmp, 'cache.db');
    db.exec("UPDATE t SET a = 'a1 x' WHERE id = 1");
    await sync(file, target, { projections: DEFS });
    const source = sourceState(db);
    const bytes = targetBytes(target);
    const cursors = openDatabase(target, { readonly: true });
    const stored = cursors
      .prepare('SELECT name, cursor, seq, fingerprint, definition, source_shape FROM _sluice_projections ORDER BY name')
      .all();
    cursors.close();

    // In the app's own transaction: an added column, a dropped one (capture's triggers dropped first), an index, a write.
    db.exec('BEGIN');
    db.exec(`ALTER TABLE t ADD COLUMN c TEXT DEFAULT 'z'; CREATE INDEX t_a ON t (a); UPDATE t SET c = 'c' WHERE id = 2`);
    for (const name of db.prepare("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND tbl_name = 't'").pluck().all() as string[])
      db.exec(`DROP TRIGGER "${name}"`);
    db.exec('ALTER TABLE t DROP COLUMN b');
    db.exec('ROLLBACK');
    // The same from a Python app.
    pythonExec(
      file,
      "BEGIN; ALTER TABLE t ADD COLUMN d INTEGER; CREATE TABLE scratch (x); INSERT INTO t (id, a, b) VALUES (9, 'a9', 'b9'); ROLLBACK;",
    );
    // And sluice alter whose second statement fails.
    expect(() => alter(db, 'ALTER TABLE t DROP COLUMN b; ALTER TABLE t ADD COLUMN')).toThrow(
      expect.objectContaining({ code: 'ALTER_FAILED' }),
    );
    expect(sourceState(db)).toEqual(source);

    const s = await sync(file, target, { projections: DEFS });
    expect(s.projections.map((p) => [p.name, p.state, p.rebuilt ?? null, p.applied])).toEqual(DEFS.map((d) => [d.name, 'active', null, 0]));
    expect(sourceState(db)).toEqual(source);
    expect(targetBytes(target)).toBe(bytes);
    const after = openDatabase(target, { readonly: true });
    expect(
      after.prepare('SELECT name, cursor, seq, fingerprint, definition, source_shape FROM _sluice_projections ORDER BY name').all(),
    ).toEqual(stored);
    after.close();
    expect((await verify(file, target)).ok).toBe(true);
  });

  test.for([
    ['an added column', "ALTER TABLE t ADD COLUMN c TEXT DEFAULT 'z'"],
    ['a dropped column two projections read', 'ALTER TABLE t DROP COLUMN b'],
    ['a renamed column', 'ALTER TABLE t RENAME COLUMN b TO bb'],
  ] as const)(
    'test_schema_evolution_refresh_concurrent_with_ddl: %s made by sluice alter between two batches of a sync: the batch after it fails with nothing written or reads it, and the next run classifies it and ends exact',
    async ([, ddl], { makeDb, tmp }) => {
      const { db, file } = makeDb('app.db', SCHEMA);
      enable(db, ['t']);
      const target = path.join(tmp, 'cache.db');
      await sync(file, target, { projections: DEFS });
      for (let i = 3; i < 200; i++) db.exec(`INSERT INTO t VALUES (${i}, 'a${i}', 'b${i}')`);
      let altered = false;
      const at: Record<string, number> = {};
      const run = await Syncer.open(file, target, {
        projections: DEFS,
        batchSize: 50,
        onProgress: (e) => {
          if (altered || e.phase !== 'catch-up') return;
          altered = true;
          // On the app's own connection, as an app would, between two target transactions of the run.
          alter(db, ddl);
          db.exec("UPDATE t SET a = 'after' WHERE id = 5");
          const t = openDatabase(target, { readonly: true });
          for (const r of t.prepare('SELECT name, seq FROM _sluice_projections').all() as { name: string; seq: bigint }[])
            at[r.name] = Number(r.seq);
          t.close();
        },
      });
      let first;
      try {
        first = await run.runOnce();
      } finally {
        run.close();
      }
      expect(altered).toBe(true);
      // Each projection either went on (a batch before the DDL, or one that read it) or failed with a code, nothing of the failed batch written.
      const t = openDatabase(target, { readonly: true });
      for (const p of first.projections) {
        const row = t.prepare('SELECT seq, failures, last_error_code FROM _sluice_projections WHERE name = ?').get(p.name) as {
          seq: bigint;
          failures: bigint;
          last_error_code: string | null;
        };
        if (p.error !== undefined) {
          expect(Number(row.failures), p.name).toBeGreaterThan(0);
          expect(row.last_error_code, p.name).toBe(p.error.code);
        }
        expect(Number(row.seq), p.name).toBeGreaterThanOrEqual(at[p.name] ?? 0);
      }
      t.close();
      // The next run (the stored definitions, compiled against the table as it is now) classifies each, and what is active is exact.
      const next = await sync(file, target);
      const v = await verify(file, target);
      for (const p of next.projections) {
        const checked = v.projections.find((x) => x.name === p.name);
        if (p.state === 'active') expect([p.name, checked?.ok, checked?.reason ?? null]).toEqual([p.name, true, null]);
        else expect([p.name, p.reason]).toEqual([p.name, 'SOURCE_COLUMN_MISSING']);
      }
      // No failure of the first run is left standing on a projection the next run brought up to date.
      const h = health(target);
      for (const p of h.projections)
        if (p.state === 'active') expect([p.name, p.failure, p.needsAction], JSON.stringify(p.problems)).toEqual([p.name, null, false]);
    },
  );
});
