// the segment writer's captured shapes, kept per connection while the schema is the same, follow an exclusion changed, a column added and a table enabled on another connection
import { test, expect, describe } from '../support/fixtures.ts';
import { openDatabase, type Db } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { journalStartCursor, readBatch } from '../../src/feed/index.ts';
import { checkSegmentBytes, SegmentWriter } from '../../src/export/index.ts';

/*
 * A publisher keeps one connection to its source and makes a segment per
 * window; the shapes of the captured tables are read once per schema
 * version of that connection. Whatever changes a shape on another
 * connection (enable with another exclusion, a column added through
 * ALTER and capture re-armed, a table newly enabled) must show in the
 * publisher's next segment: never a column capture leaves out, never one
 * missing.
 */

function columnsOf(pub: Db, cursor: string): Record<string, string[]> {
  const w = new SegmentWriter(pub, 'src-1', null);
  w.addBatch(readBatch(pub, cursor, { limit: 1000 }));
  const c = checkSegmentBytes('message', w.finishInMemory().data);
  c.image?.close();
  return Object.fromEntries(c.tables.map((t) => [t.name, t.columns.map((x) => x.name)]));
}

describe("the segment writer's kept shapes", () => {
  test('follow changes made on another connection', ({ makeDb }) => {
    const { db, file } = makeDb(
      'app.db',
      'CREATE TABLE t (id INTEGER PRIMARY KEY, secret TEXT, pub TEXT); CREATE TABLE u (id INTEGER PRIMARY KEY, x)',
    );
    enable(db, ['t']);
    const pub = openDatabase(file);
    try {
      let cursor = journalStartCursor(pub);
      db.exec("INSERT INTO t VALUES (1, 's', 'p')");
      expect(columnsOf(pub, cursor)).toEqual({ t: ['id', 'secret', 'pub'] });
      enable(db, ['t'], { exclude: ['secret'] });
      cursor = journalStartCursor(pub);
      db.exec("INSERT INTO t VALUES (2, 's', 'p')");
      expect(columnsOf(pub, cursor)).toEqual({ t: ['id', 'pub'] });
      db.exec('ALTER TABLE t ADD COLUMN more TEXT');
      // A column new since t left secret out may be secret renamed: enable is told to capture it.
      enable(db, ['t'], { include: ['more'] });
      cursor = journalStartCursor(pub);
      db.exec("INSERT INTO t VALUES (3, 's', 'p', 'm')");
      expect(columnsOf(pub, cursor)).toEqual({ t: ['id', 'pub', 'more'] });
      enable(db, ['u']);
      cursor = journalStartCursor(pub);
      db.exec("INSERT INTO u VALUES (1, 'x'); INSERT INTO t VALUES (4, 's', 'p', 'm')");
      expect(columnsOf(pub, cursor)).toEqual({ t: ['id', 'pub', 'more'], u: ['id', 'x'] });
    } finally {
      pub.close();
    }
  });
});
