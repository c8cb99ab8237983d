// a segment in another text encoding than its target is refused (TARGET_ENCODING) whether it is read from its file or from memory
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, runPython, failure } from '../support/fixtures.ts';
import { openDatabase, type Db } from '../../src/sqlite/index.ts';
import { enable } from '../../src/capture/index.ts';
import { journalStartCursor, readBatch } from '../../src/feed/index.ts';
import { checkSegment, checkSegmentBytes, importStream, segmentItems, SegmentWriter } from '../../src/export/index.ts';
import { dumpTables } from '../cli/support/cli.ts';

/*
 * A subscriber that continues a target reads no marker line first, so
 * nothing compares the segments' text encoding with the target's before
 * they are read (a JSONL batch's marker is: TARGET_ENCODING). An attached
 * segment in another encoding could not be attached (SQLite refuses it); one
 * read in memory was decoded and written into the target converted, which
 * is not the source's TEXT exactly. Both are refused, nothing committed.
 */

const SOURCE = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA encoding = '" + sys.argv[2] + "'")
con.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT)")
con.execute("INSERT INTO t VALUES (1, 'one')")
con.commit()
`;

function captured(file: string, encoding: string): Db {
  runPython(SOURCE, [file, encoding]);
  const db = openDatabase(file);
  enable(db, ['t']);
  return db;
}

describe('a segment in another encoding than its target', () => {
  test('is refused from its file and from memory, nothing committed', async ({ tmp }) => {
    // The target: a UTF-8 source's snapshot.
    const a = captured(path.join(tmp, 'a.db'), 'UTF-8');
    const sw = new SegmentWriter(a, 'src-1', null);
    sw.addSnapshot(undefined);
    const snap = checkSegmentBytes('message 1', sw.finishInMemory().data);
    a.close();
    const target = path.join(tmp, 'target.db');
    await importStream(target, { label: snap.file, size: () => snap.size, read: (o) => segmentItems(snap, o) });
    // The same source's events, but its text in UTF-16le (a copy of it made in that encoding).
    const b = captured(path.join(tmp, 'b.db'), 'UTF-16le');
    const cursor = journalStartCursor(b);
    b.prepare('INSERT INTO t VALUES (2, ?)').run('two');
    const w = new SegmentWriter(b, 'src-1', null);
    w.addBatch(readBatch(b, cursor, { limit: 100 }));
    const data = w.finishInMemory().data;
    b.close();
    const file = path.join(tmp, 'events.segment');
    fs.writeFileSync(file, data);
    const before = dumpTables(target);
    // As a continuing subscriber reads them: no encoding known up front.
    const fromFile = checkSegment(file);
    const e1 = await failure(() => importStream(target, { label: file, size: () => 1, read: (o) => segmentItems(fromFile, o) }));
    expect(e1).toMatchObject({ code: 'TARGET_ENCODING' });
    const inMemory = checkSegmentBytes('stream s message 2', data);
    const e2 = await failure(() => importStream(target, { label: 'm', size: () => 1, read: (o) => segmentItems(inMemory, o) }));
    expect(e2).toMatchObject({ code: 'TARGET_ENCODING' });
    expect(inMemory.image?.open).toBe(false);
    expect(dumpTables(target)).toEqual(before);
  });
});
