// a subscriber given a changed definition that only a rebuild follows rebuilds it from the stream's last snapshot, before or after the target's cursor
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { test, expect, describe } from '../support/fixtures.ts';
import { makeDir, removeDir, scalar, onDatabase, projectionSeq, sourceSeq } from '../cli/support/cli.ts';
import { enable } from '../../src/capture/index.ts';
import { subscribe } from '../../src/broker/index.ts';
import { natsForFile, publishOnce, sourceIdOf } from './support/broker.ts';

/*
 * A subscriber given a definition of a projection its target holds that
 * differs from the one it was built with in a way only a rebuild follows
 * (a map with a column added and another filter: Rebuildable) started
 * from the target's cursor, past the stream's snapshot, and the importer
 * refused the first batch with IMPORT_NO_SNAPSHOT, "the stream has no
 * snapshot before this batch", although the stream held one (the one the
 * projection was built from). A sluice run subscribe part so failed at
 * every attempt. Now such a definition makes the subscriber start from the
 * stream's last snapshot, which rebuilds the projection by it (the others,
 * at or past the snapshot, go on from their cursors), then applies the
 * batches after it; as does a snapshot published after the target's
 * cursor.
 */

const nats = natsForFile();

const OPEN = { name: 'r_open', source: 'issues', kind: 'map', columns: { id: 'id', title: 'title' }, filter: "state = 'open'" } as const;
const CLOSED = {
  name: 'r_open',
  source: 'issues',
  kind: 'map',
  columns: { id: 'id', title: 'title', state: 'state' },
  filter: "state <> 'open'",
} as const;

/** The sqlite3 CLI on `file` (an app writing its database). */
function sqlite(file: string, sql: string): void {
  execFileSync('sqlite3', [file, sql]);
}

function source(dir: string, tables: readonly string[]): string {
  const src = path.join(dir, 'app.db');
  sqlite(
    src,
    `CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT, state TEXT);
     INSERT INTO issues VALUES (1, 'a', 'open'), (2, 'b', 'closed');
     CREATE TABLE labels (id INTEGER PRIMARY KEY, name TEXT);
     INSERT INTO labels VALUES (1, 'bug');`,
  );
  onDatabase(src, (db) => enable(db, [...tables]));
  return src;
}

function rows(file: string, sql: string): string {
  return JSON.stringify(
    onDatabase(file, (db) => db.prepare(sql).raw().all()),
    (_k, v: unknown) => (typeof v === 'bigint' ? Number(v) : v),
  );
}

describe('subscribe with a changed definition', () => {
  test('the stream snapshot lies before the target cursor: the projection is rebuilt from it by the new definition, and the batches since are applied', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = source(dir, ['issues']);
      const sourceId = sourceIdOf(src);
      const replica = path.join(dir, 'replica.db');
      await publishOnce(src, url);
      await subscribe(replica, url, { sourceId, projections: [OPEN], mirrorAll: true });
      sqlite(src, `INSERT INTO issues VALUES (3, 'c', 'open')`);
      await publishOnce(src, url);
      await subscribe(replica, url, { sourceId, projections: [OPEN], mirrorAll: true });
      expect(rows(replica, 'SELECT * FROM r_open ORDER BY id')).toBe('[[1,"a"],[3,"c"]]');

      sqlite(src, `INSERT INTO issues VALUES (4, 'd', 'closed')`);
      await publishOnce(src, url);
      const r = await subscribe(replica, url, { sourceId, projections: [CLOSED], mirrorAll: true });
      expect(r.started).toBe('snapshot');
      expect(rows(replica, 'SELECT * FROM r_open ORDER BY id')).toBe('[[2,"b","closed"],[4,"d","closed"]]');
      expect(scalar(replica, 'SELECT count(*) FROM issues')).toBe(4n);
      expect(projectionSeq(replica, 'r_open')).toBe(sourceSeq(src));
      expect(projectionSeq(replica, 'issues')).toBe(sourceSeq(src));

      // Given again, it is the one the projection holds: on from its cursor, no snapshot.
      sqlite(src, `INSERT INTO issues VALUES (5, 'e', 'closed')`);
      await publishOnce(src, url);
      const again = await subscribe(replica, url, { sourceId, projections: [CLOSED], mirrorAll: true });
      expect(again.started).toBe('batch');
      expect(rows(replica, 'SELECT id FROM r_open ORDER BY id')).toBe('[[2],[4],[5]]');
    } finally {
      removeDir(dir);
    }
  }, 60_000);

  test('the stream last snapshot lies after the target cursor: it starts from that snapshot, not from the batch before it', async () => {
    const dir = makeDir();
    try {
      const url = nats.server().url;
      const src = source(dir, ['issues']);
      const sourceId = sourceIdOf(src);
      const replica = path.join(dir, 'replica.db');
      await publishOnce(src, url);
      await subscribe(replica, url, { sourceId, projections: [OPEN] });
      sqlite(src, `INSERT INTO issues VALUES (3, 'c', 'open')`);
      await publishOnce(src, url);
      // Another table captured: the next pass publishes the batches, then a snapshot of every captured table (STREAM_TABLES_ADDED).
      onDatabase(src, (db) => enable(db, ['labels']));
      sqlite(src, `INSERT INTO issues VALUES (4, 'd', 'closed')`);
      await publishOnce(src, url);

      const r = await subscribe(replica, url, { sourceId, projections: [CLOSED] });
      expect(r.started).toBe('snapshot');
      expect(rows(replica, 'SELECT * FROM r_open ORDER BY id')).toBe('[[2,"b","closed"],[4,"d","closed"]]');
      expect(projectionSeq(replica, 'r_open')).toBe(sourceSeq(src));
    } finally {
      removeDir(dir);
    }
  }, 60_000);
});
