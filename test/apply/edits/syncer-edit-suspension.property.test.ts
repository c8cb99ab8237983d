// a long lived syncer suspends exactly the projections another program edited whatever else writes the target
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { openDatabase, type Db, WalFiles } from '../../../src/sqlite/index.ts';
import { enable } from '../../../src/capture/index.ts';
import { Syncer } from '../../../src/apply/sync/index.ts';
import { readProjections } from '../../../src/apply/target/index.ts';
import { prng } from '../../../fixtures/tracker.ts';
import type { ProjectionDefinitionInput } from '../../../src/projection/index.ts';

/*
 * One Syncer kept open across runs (as `sync --follow` keeps it), and
 * between its runs another connection writes the target at random: its own
 * tables (small rows, rows that overflow a page, deletes that free pages, a
 * VACUUM, checkpoints that let the WAL start again), no-op updates of a
 * projection's rows, and now and then a real edit of one projection (a
 * mirror, a map, an fts5 index's key table or the index itself). After each
 * run, the projections suspended with TARGET_EDITED are exactly those that
 * were edited: every edit is found, and nothing else suspends anything.
 * Also: an edit that lands between two batches of one run (a long catch-up)
 * is found in that run.
 */

const SCHEMA = 'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER, b BLOB);';
const PROJECTIONS: ProjectionDefinitionInput[] = [
  { name: 't', source: 't', kind: 'mirror' },
  { name: 'tm', source: 't', kind: 'map', columns: { id: 'id', label: 'name', n: 'n' }, filter: 'n >= 10' },
  { name: 'tf', source: 't', kind: 'fts5', columns: ['name'], content: 'external' },
];

function fill(db: Db, rows: number): void {
  const ins = db.prepare('INSERT INTO t (id, name, n, b) VALUES (?, ?, ?, randomblob(40))');
  db.transaction(() => {
    for (let i = 1; i <= rows; i++) ins.run(i, `name ${i} word${i % 17}`, i % 100);
  })();
}

function edited(tgt: string): string[] {
  const db = openDatabase(tgt, { readonly: true });
  try {
    return readProjections(db, 'main')
      .filter((r) => r.state === 'suspended')
      .map((r) => `${r.name}:${r.reason ?? ''}`)
      .sort();
  } finally {
    db.close();
  }
}

describe('a Syncer kept open across runs, with another program writing its target', () => {
  test('suspends with TARGET_EDITED exactly the projections that were edited, over random writes to other tables', async ({
    makeDb,
    tmp,
  }) => {
    for (const seed of [1, 2, 3]) {
      const rand = prng(seed);
      const { db: src, file: srcFile } = makeDb(`src-${seed}.db`, SCHEMA);
      fill(src, 3000);
      enable(src, ['t']);
      const tgt = path.join(tmp, `tgt-${seed}.db`);
      const syncer = await Syncer.open(srcFile, tgt, { projections: PROJECTIONS });
      const other = openDatabase(tgt);
      // A checkpoint that waits for readers (RESTART) gives up at once while the Syncer's watch holds its snapshot.
      other.pragma('busy_timeout = 0');
      other.exec('CREATE TABLE mine (id INTEGER PRIMARY KEY, v BLOB)');
      const want = new Set<string>();
      try {
        await syncer.runOnce();
        for (let round = 0; round < 40; round++) {
          const ops = 1 + Math.floor(rand() * 4);
          for (let i = 0; i < ops; i++) {
            const x = rand();
            const id = 1 + Math.floor(rand() * 3000);
            if (x < 0.3) other.prepare('INSERT INTO mine (v) VALUES (randomblob(?))').run(rand() < 0.3 ? 9000 : 50);
            else if (x < 0.45) other.prepare('DELETE FROM mine WHERE id IN (SELECT id FROM mine ORDER BY random() LIMIT 3)').run();
            else if (x < 0.5) other.exec('VACUUM');
            else if (x < 0.6) {
              // A checkpoint, then the follower idle past its pin's refresh interval (it looks, between runs, as
              // sync --follow does): the log is all copied, so the next writer starts it again.
              other.pragma(rand() < 0.5 ? 'wal_checkpoint(PASSIVE)' : 'wal_checkpoint(RESTART)');
              await new Promise((r) => setTimeout(r, 110));
              syncer.noticeTargetEdits();
              // Whatever it suspended was edited.
              for (const s of edited(tgt)) expect([...want].map((n) => `${n}:TARGET_EDITED`)).toContain(s);
            } else if (x < 0.7)
              other.prepare('UPDATE t SET name = name WHERE id = ?').run(id); // changes nothing
            else if (x < 0.8) src.prepare("UPDATE t SET name = name || '+' WHERE id = ?").run(id);
            else if (x < 0.85 && !want.has('t')) {
              if (other.prepare('UPDATE t SET n = n + 1000 WHERE id = ?').run(id).changes > 0) want.add('t');
            } else if (x < 0.9 && !want.has('tm')) {
              if (other.prepare('DELETE FROM tm WHERE id = (SELECT min(id) FROM tm WHERE id >= ?)').run(id).changes > 0) want.add('tm');
            } else if (x < 0.95 && !want.has('tf')) {
              const r =
                rand() < 0.5
                  ? other.prepare("UPDATE tf_src SET name = 'edited' WHERE rowid = ?").run(id)
                  : other.prepare("INSERT INTO tf (rowid, name) VALUES (?, 'planted')").run(100_000 + id);
              if (r.changes > 0) want.add('tf');
            } else other.prepare('INSERT INTO mine (v) VALUES (zeroblob(20000))').run();
          }
          const report = await syncer.runOnce();
          expect(
            report.projections.every((p) => p.error === undefined),
            JSON.stringify(report),
          ).toBe(true);
          expect(edited(tgt), `seed ${seed}, round ${round}`).toEqual([...want].sort().map((n) => `${n}:TARGET_EDITED`));
        }
        expect(want.size, 'every kind was edited at some point').toBe(3);
      } finally {
        other.close();
        syncer.close();
      }
    }
  }, 120_000);

  test('an edit between two batches of one run is found in that run, and the other projections catch up', async ({ makeDb, tmp }) => {
    const { db: src, file: srcFile } = makeDb('src.db', SCHEMA);
    fill(src, 500);
    enable(src, ['t']);
    const tgt = path.join(tmp, 'tgt.db');
    const first = await Syncer.open(srcFile, tgt, { projections: PROJECTIONS });
    await first.runOnce();
    first.close();
    src.exec("UPDATE t SET name = name || ' later' WHERE id % 2 = 0");
    let editedOnce = false;
    const syncer = await Syncer.open(srcFile, tgt, {
      projections: PROJECTIONS,
      batchSize: 50,
      onProgress: (p) => {
        // The first batch of the mirror has committed: another program edits the map's table.
        if (p.projection === 't' && p.phase === 'catch-up' && !editedOnce) {
          editedOnce = true;
          const other = openDatabase(tgt);
          other.exec("UPDATE tm SET label = 'edited' WHERE id = 11");
          other.close();
        }
      },
    });
    try {
      const r = await syncer.runOnce();
      expect(editedOnce).toBe(true);
      const by = Object.fromEntries(r.projections.map((p) => [p.name, p]));
      expect(by.tm).toMatchObject({ state: 'suspended', reason: 'TARGET_EDITED' });
      expect(by.tm?.detail).toMatchObject({ tables: ['tm'], diffs: [{ key: [11], kind: 'different' }] });
      expect(by.t).toMatchObject({ state: 'active', seq: r.sourceSeq });
      expect(by.tf).toMatchObject({ state: 'active', seq: r.sourceSeq });
      expect(edited(tgt)).toEqual(['tm:TARGET_EDITED']);
    } finally {
      syncer.close();
    }
  });

  test('a log grown past 10,000 frames by another program is checkpointed by the watch and starts again, and an edit after that is found', async ({
    makeDb,
    tmp,
  }) => {
    const { db: src, file: srcFile } = makeDb('src.db', SCHEMA);
    fill(src, 200);
    enable(src, ['t']);
    const tgt = path.join(tmp, 'tgt.db');
    const syncer = await Syncer.open(srcFile, tgt, { projections: PROJECTIONS });
    const other = openDatabase(tgt);
    const wal = new WalFiles(tgt);
    try {
      await syncer.runOnce();
      // A page per row, in one commit: the log is past 10,000 frames, which the follower's snapshot keeps from being copied.
      other.exec('CREATE TABLE mine (id INTEGER PRIMARY KEY, v BLOB)');
      other.exec(
        'WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 10500) INSERT INTO mine (v) SELECT zeroblob(3000) FROM c',
      );
      const grown = wal.end();
      expect(grown?.frame).toBeGreaterThan(10_000);
      expect(syncer.noticeTargetEdits()).toBeUndefined(); // the user's own table: nothing suspended
      const copied = wal.end();
      expect(copied?.backfilled, 'the watch checkpointed the whole log').toBe(copied?.frame);
      // sluice's next commit starts the log again (the watch's snapshot allows it), and the watch reads the new one.
      src.exec("UPDATE t SET name = 'after' WHERE id = 1");
      await syncer.runOnce();
      const restarted = wal.end();
      expect(restarted?.salt).not.toBe(grown?.salt);
      expect(restarted?.frame).toBeLessThan(100);
      other.exec("UPDATE t SET name = 'edited' WHERE id = 2");
      const r = await syncer.runOnce();
      expect(r.projections.map((p) => [p.name, p.state, p.reason])).toEqual([
        ['t', 'suspended', 'TARGET_EDITED'],
        ['tm', 'active', undefined],
        ['tf', 'active', undefined],
      ]);
    } finally {
      wal.close();
      other.close();
      syncer.close();
    }
  }, 120_000);
});
