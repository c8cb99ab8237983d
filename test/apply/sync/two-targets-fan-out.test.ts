// one source fans out to projections in two targets each with its own cursor
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, runPython, ROOT } from '../../support/fixtures.ts';
import { buildTracker, TRACKER_TABLES } from '../../../fixtures/tracker.ts';
import { openDatabase, type Db } from '../../../src/sqlite/index.ts';
import { enable } from '../../../src/capture/index.ts';
import { Syncer } from '../../../src/apply/sync/index.ts';
import { verify } from '../../../src/apply/check/index.ts';
import { loadDefinitions, type ProjectionDefinition } from '../../../src/projection/index.ts';
import { highWater, projectionRows, tableCells } from '../support/target.ts';

/*
 * The example projections of projections/ over the demo fixture, split over
 * two target databases, kept by two Syncers in one process while Python
 * writes to the source. Each projection has its own cursor; one suspended
 * projection holds back nothing else.
 */

async function examples(...files: string[]): Promise<ProjectionDefinition[]> {
  const out: ProjectionDefinition[] = [];
  for (const f of files) out.push(...(await loadDefinitions(path.join(ROOT, 'projections', f))));
  return out;
}

/** An external writer (Python's sqlite3, defaults) that commits and closes. */
function python(file: string, sql: string): void {
  runPython('import sqlite3, sys\nc = sqlite3.connect(sys.argv[1], timeout=10)\nc.executescript(sys.argv[2])\nc.close()', [file, sql]);
}

function seqs(target: string): Record<string, number> {
  return Object.fromEntries([...projectionRows(target).values()].map((p) => [p.name, Number(p.seq)]));
}

function commentCounts(db: Db, schema: string, table: string): unknown[] {
  return db
    .prepare(
      `SELECT repo_id, issue_number, ${table === 'comments' ? 'count(*)' : 'comments'} FROM ${schema}.${table}${table === 'comments' ? ' GROUP BY 1, 2' : ''} ORDER BY 1, 2`,
    )
    .raw()
    .all();
}

describe('one source feeding projections in two targets', () => {
  test('each projection keeps its own cursor, a suspended one blocks no other, and an external writer never pulls the WAL from under them', async ({
    tmp,
  }) => {
    const source = path.join(tmp, 'tracker.db');
    buildTracker(source, { repositories: 3, issuesPerRepo: 12, commentsPerIssue: 2 });
    const src = openDatabase(source);
    enable(src, [...TRACKER_TABLES]);
    const fileA = path.join(tmp, 'issues.db');
    const fileB = path.join(tmp, 'social.db');
    let hw1 = 0;
    let hw3 = 0;
    const a = await Syncer.open(source, fileA, {
      projections: await examples('issues-mirror.json', 'open-issues.json', 'issues-search.json'),
      batchSize: 7,
    });
    const b = await Syncer.open(source, fileB, {
      projections: await examples('repositories.json', 'comments-search.json', 'comment-counts.ts'),
    });
    try {
      const first = [...(await a.runOnce()).projections, ...(await b.runOnce()).projections];
      expect(first.map((p) => [p.name, p.state])).toEqual(
        ['issues', 'open_issues', 'issues_search', 'repositories', 'comments_search', 'comment_counts'].map((n) => [n, 'active']),
      );
      const start = highWater(src);

      // Python writes and closes while both Syncers (and this connection) stay open.
      python(
        source,
        `
        UPDATE issues SET state = 'closed' WHERE repo_id = 1 AND number <= 4;
        UPDATE issues SET title = title || ' again', score = 99.5 WHERE repo_id = 2 AND number = 3;
        INSERT INTO comments (repo_id, issue_number, author, body, created_at) VALUES (1, 1, 'py', 'sqlite crash again', '2026-03-01');
        DELETE FROM comments WHERE id % 7 = 0;
        UPDATE repositories SET stars = stars + 1;
      `,
      );
      expect(fs.existsSync(`${source}-wal`), 'the source WAL survives an external writer closing').toBe(true);
      hw1 = highWater(src);
      expect(hw1).toBeGreaterThan(start);

      // Only B syncs: B is current, A's cursors have not moved.
      const onlyB = await b.runOnce();
      expect(onlyB.projections.map((p) => [p.state, p.seq])).toEqual(onlyB.projections.map(() => ['active', hw1]));
      expect(Object.values(seqs(fileA))).toEqual([start, start, start]);
      expect(Object.values(seqs(fileB))).toEqual([hw1, hw1, hw1]);
      expect(commentCounts(b.session.db, 'tgt', 'comment_counts')).toEqual(commentCounts(src, 'main', 'comments'));

      // A catches up in batches of 7, each projection on its own cursor.
      const caughtUp = await a.runOnce();
      expect(caughtUp.projections.map((p) => [p.name, p.state, p.seq])).toEqual([
        ['issues', 'active', hw1],
        ['open_issues', 'active', hw1],
        ['issues_search', 'active', hw1],
      ]);
      expect(tableCells(a.session.db, 'tgt', 'issues')).toEqual(tableCells(src, 'main', 'issues'));
      expect(a.session.db.prepare('SELECT count(*) FROM tgt.open_issues WHERE repo = 1 AND num <= 4').pluck().get()).toBe(0n);

      // Tamper with A's mirror: that projection suspends at the next change of the row; all others go on.
      a.session.db.exec("UPDATE tgt.issues SET title = 'tampered' WHERE repo_id = 3 AND number = 5");
      python(
        source,
        "UPDATE issues SET body = 'edited by python', state = 'open' WHERE repo_id = 3 AND number IN (5, 6); INSERT INTO comments (repo_id, issue_number, author, body, created_at) VALUES (3, 5, 'py', 'fts5 rebuild', '2026-03-02');",
      );
      const hw2 = highWater(src);
      const mixed = [...(await a.runOnce()).projections, ...(await b.runOnce()).projections];
      expect(mixed.map((p) => [p.name, p.state, p.reason, p.seq])).toEqual([
        ['issues', 'suspended', 'TARGET_DIVERGED', 0],
        ['open_issues', 'active', undefined, hw2],
        ['issues_search', 'active', undefined, hw2],
        ['repositories', 'active', undefined, hw2],
        ['comments_search', 'active', undefined, hw2],
        ['comment_counts', 'active', undefined, hw2],
      ]);
      expect(mixed[0]?.detail).toMatchObject({ table: 'issues', key: [3, 5] });
      expect(seqs(fileA).issues).toBe(hw1);

      // Later writes: the suspended projection stays where it was; the others keep up.
      python(
        source,
        "INSERT INTO issues (repo_id, number, title, body, state, author, score, updated_at) VALUES (1, 100, 'sqlite wal', 'new', 'open', 'py', 50.0, '2026-03-03');",
      );
      hw3 = highWater(src);
      await a.runOnce();
      await b.runOnce();
      expect(seqs(fileA)).toEqual({ issues: hw1, issues_search: hw3, open_issues: hw3 });
      expect(seqs(fileB)).toEqual({ comment_counts: hw3, comments_search: hw3, repositories: hw3 });
      expect(a.session.db.prepare("SELECT num FROM tgt.open_issues WHERE title = 'sqlite wal'").pluck().all()).toEqual([100n]);
      expect(commentCounts(b.session.db, 'tgt', 'comment_counts')).toEqual(commentCounts(src, 'main', 'comments'));
    } finally {
      a.close();
      b.close();
    }

    const va = await verify(source, fileA);
    expect(va.projections.map((p) => [p.name, p.ok, p.reason])).toEqual([
      ['issues', false, 'TARGET_DIVERGED'],
      ['issues_search', true, undefined],
      ['open_issues', true, undefined],
    ]);
    expect((await verify(source, fileB)).ok).toBe(true);
    // Every projection acknowledged its own position in the source, under its own name and target (its real path).
    const acks = src.prepare('SELECT name, seq FROM main._sluice_consumers ORDER BY name').raw().all();
    src.close();
    const [social, issues] = [fs.realpathSync(fileB), fs.realpathSync(fileA)];
    expect(acks).toEqual(
      (
        [
          [`comment_counts@${social}`, hw3],
          [`comments_search@${social}`, hw3],
          [`issues@${issues}`, hw1],
          [`issues_search@${issues}`, hw3],
          [`open_issues@${issues}`, hw3],
          [`repositories@${social}`, hw3],
        ] as [string, number][]
      )
        .sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))
        .map(([n, q]) => [n, BigInt(q)]),
    );
  });
});
