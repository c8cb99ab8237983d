// export resumes from its cursor file with no duplicate or missing event
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { exportLineSchema, type ExportLine, positionOf, readResumePoint } from '../../src/export/index.ts';
import { decodeCursor } from '../../src/feed/index.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, write } from '../cli/support/cli.ts';

let dir: string;
let src: string;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['issues', 'comments']);
});
afterAll(() => removeDir(dir));

function readExport(file: string): ExportLine[] {
  const text = fs.readFileSync(file, 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text
    .trimEnd()
    .split('\n')
    .map((l) => exportLineSchema.parse(JSON.parse(l)));
}

/** The cursor file holds the summary's cursor and where the file's complete part ends: here, the whole file. */
function expectCursorFileAt(cursorFile: string, out: string, cursor: string | null): void {
  const point = readResumePoint(cursorFile);
  expect(point.cursor === undefined ? undefined : positionOf(point.cursor)).toBe(cursor);
  expect(point.offset).toBe(fs.statSync(out).size);
}

function journalSeqsAfter(seq: number): number[] {
  const db = openDatabase(src, { readonly: true });
  try {
    return (db.prepare('SELECT seq FROM main._sluice_journal WHERE seq > ? ORDER BY seq').pluck().all(seq) as bigint[]).map(Number);
  } finally {
    db.close();
  }
}

describe('export', () => {
  test('run, write, run again: the file holds every event once, in contiguous batches, and the cursor file says where it ends', async () => {
    const out = at('stream.jsonl');
    const cursorFile = `${out}.cursor`;
    const run = async () => {
      const r = await runCliAsync(['export', src, '--out', out, '--batch', '4', '--json']);
      expect(r.status, r.stderr).toBe(0);
      return parseJson(r, S.exportOutput);
    };

    const first = await run();
    expect(first).toMatchObject({ events: 0, batches: 0 });
    expect(first.rows).toBe(200 + 600);
    expectCursorFileAt(cursorFile, out, first.cursor);

    // An external writer, then a writer in this process, between runs.
    runPython(
      `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for n in range(1, 8):
    con.execute("UPDATE issues SET title = 'run two ' || number WHERE repo_id = 3 AND number = ?", (n,))
    con.commit()
con.execute("DELETE FROM comments WHERE id IN (7, 8, 9)")
con.commit()`,
      [src],
    );
    const second = await run();
    expect(second).toMatchObject({ rows: 0, events: 10, batches: 3 });

    write(
      src,
      "INSERT INTO comments (id, repo_id, issue_number, author, body, created_at) VALUES (9001, 1, 1, 'me', 'third run', '2026-06-01'); UPDATE issues SET state = 'closed' WHERE repo_id = 4 AND number = 4 AND state = 'open'; UPDATE issues SET score = -1.5 WHERE repo_id = 4 AND number = 5",
    );
    const third = await run();
    expect(third.rows).toBe(0);
    expect(third.events).toBeGreaterThanOrEqual(2);

    // Nothing new: a fourth run appends nothing at all.
    const size = fs.statSync(out).size;
    const fourth = await run();
    expect(fourth).toMatchObject({ rows: 0, events: 0, batches: 0, cursor: third.cursor });
    expect(fs.statSync(out).size).toBe(size);

    const lines = readExport(out);
    const snapshots = lines.filter((l) => 'type' in l && l.type === 'snapshot');
    expect(snapshots).toHaveLength(1); // the resumed runs did not snapshot again
    const snapshotSeq = (snapshots[0] as ExportLine).seq;

    // Events: no duplicates, and exactly the journal after the snapshot.
    const events = lines.filter((l) => 'op' in l);
    const seqs = events.map((e) => e.seq);
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(seqs).toEqual(journalSeqsAfter(snapshotSeq));
    expect(seqs).toHaveLength(10 + third.events);

    // Batches: each starts where the previous one (or the snapshot) ended, and holds exactly its range.
    let prev = snapshotSeq;
    let pending: number[] = [];
    let batches = 0;
    for (const l of lines) {
      if ('op' in l) pending.push(l.seq);
      else if (l.type === 'batch') {
        expect(l.fromSeq).toBe(prev);
        expect(pending.length).toBeGreaterThan(0);
        expect(pending.every((s) => s > l.fromSeq && s <= l.seq)).toBe(true);
        expect(decodeCursor(l.cursor).seq).toBe(l.seq);
        prev = l.seq;
        pending = [];
        batches++;
      }
    }
    expect(pending).toEqual([]);
    expect(batches).toBe(second.batches + third.batches);
    expectCursorFileAt(cursorFile, out, third.cursor);
    expect(decodeCursor(third.cursor as string).seq).toBe(prev);
  });
});
