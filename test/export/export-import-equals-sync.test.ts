// export then import gives the same target as sync and applies each batch once
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { exportLineSchema, type ExportLine } from '../../src/export/index.ts';
import {
  runCliAsync,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  dumpTables,
  expectOneLineError,
  scalar,
  syncByLibrary,
} from '../cli/support/cli.ts';

/*
 * One export file (a snapshot, then batches of 7 events written by an
 * external Python writer) imported in several ways; every way must end in
 * the same target as `sync`, and a batch is committed whole or not at all.
 */

const TABLES = ['comments', 'issues', 'labels', 'repositories'];

const WRITER = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i in range(10):
    con.execute("INSERT INTO issues (repo_id, number, title, body, state, author, score, updated_at) VALUES (1, ?, ?, NULL, 'open', 'py', ?, '2026-05-01')", (500 + i, 'from python %d' % i, i / 3))
    con.commit()
for n in range(1, 11):
    con.execute("UPDATE issues SET title = title || ' (edited)', score = NULL WHERE repo_id = 2 AND number = ?", (n,))
    con.commit()
con.execute("UPDATE comments SET id = id + 5000 WHERE id <= 3")
con.commit()
con.execute("DELETE FROM comments WHERE id BETWEEN 20 AND 25")
con.commit()
con.execute("UPDATE labels SET color = x'' WHERE repo_id = 1")
con.execute("INSERT INTO repositories (id, owner, name, description, stars, created_at) VALUES (77, 'py', 'NEW', CAST(x'ff41' AS TEXT), 9223372036854775807, '2026-05-02')")
con.commit()
`;

let dir: string;
let src: string;
let full: string; // the complete export file
let lines: string[]; // its lines, without the newlines
let batchLineIdx: number[]; // indexes (0-based) of its batch marker lines
let synced: string;
let syncedDump: Record<string, string[]>;
/** The target after importing a file cut inside the third batch: the state at the second batch's end. */
let atSecondBatch: Record<string, string[]> | undefined;
const at = (f: string) => path.join(dir, f);

function parsed(i: number): ExportLine {
  return exportLineSchema.parse(JSON.parse(lines[i] as string));
}

function projectionSeqs(file: string): Record<string, number> {
  const rows = JSON.parse(String(scalar(file, 'SELECT json_group_object(name, seq) FROM main._sluice_projections'))) as Record<
    string,
    number
  >;
  return rows;
}

beforeAll(async () => {
  dir = makeDir();
  src = trackerSource(at('app.db'));
  full = at('full.jsonl');
  const first = await runCliAsync(['export', src, '--out', full, '--batch', '7', '--json']);
  expect(first.status, first.stderr).toBe(0);
  runPython(WRITER, [src]);
  // The synced target is the reference: synced through the library the CLI runs (`sluice sync SRC TGT`, exit code 0).
  const [second, syncExit] = await Promise.all([
    runCliAsync(['export', src, '--out', full, '--batch', '7', '--json']),
    syncByLibrary(src, at('synced.db')),
  ]);
  expect(second.status, second.stderr).toBe(0);
  expect(syncExit).toBe(0);
  expect(parseJson(second, S.exportOutput)).toMatchObject({ rows: 0, events: 33, batches: 5 });
  synced = at('synced.db');
  syncedDump = dumpTables(synced);
  lines = fs.readFileSync(full, 'utf8').split('\n');
  expect(lines.pop()).toBe(''); // the file ends with a newline
  batchLineIdx = lines.flatMap((l, i) => (l.includes('"type":"batch"') ? [i] : []));
  expect(batchLineIdx).toHaveLength(5);
});
afterAll(() => removeDir(dir));

describe('export -> import', () => {
  test('equals sync: every table of the imported target is the synced target, and the source', async () => {
    const imported = at('imported.db');
    const r = await runCliAsync(['import', imported, full, '--json']);
    expect(r.status, r.stderr).toBe(0);
    const rep = parseJson(r, S.importOutput);
    expect(rep).toMatchObject({ lines: lines.length, batchesApplied: 5, batchesSkipped: 0, incompleteTail: 0 });
    const seq = Number(scalar(src, 'SELECT max(seq) FROM main._sluice_journal'));
    expect(rep.projections.map((p) => [p.name, p.state, p.seq]).sort()).toEqual(TABLES.map((t) => [t, 'active', seq]));
    expect(Object.keys(syncedDump)).toEqual(TABLES);
    expect(dumpTables(imported)).toEqual(syncedDump);
    expect(dumpTables(src, TABLES)).toEqual(syncedDump);
    // The external writer's exact values made it through the JSONL encoding (int64, malformed UTF-8 TEXT, empty BLOB).
    expect(syncedDump.repositories).toContain(
      `77|T${Buffer.from('py').toString('hex').toUpperCase()}|T${Buffer.from('NEW').toString('hex').toUpperCase()}|TFF41|9223372036854775807|T${Buffer.from('2026-05-02').toString('hex').toUpperCase()}`,
    );
    expect(syncedDump.labels?.filter((r) => r.endsWith("|X''"))).toHaveLength(3);
  });

  test('importing the same file twice applies it once', async () => {
    const imported = at('imported.db');
    const before = dumpTables(imported);
    const seqs = projectionSeqs(imported);
    const r = await runCliAsync(['import', imported, full, '--json']);
    expect(r.status, r.stderr).toBe(0);
    expect(parseJson(r, S.importOutput)).toMatchObject({ batchesApplied: 0, batchesSkipped: 5, incompleteTail: 0 });
    expect(dumpTables(imported)).toEqual(before);
    expect(projectionSeqs(imported)).toEqual(seqs);
  });

  test('a file cut mid-line inside a batch, then the full file, gives the same target', async () => {
    // Cut in the middle of the line before the third batch marker: mid-line and mid-batch.
    const cutLine = (batchLineIdx[2] as number) - 1;
    const kept = lines.slice(0, cutLine).join('\n');
    const partial = (lines[cutLine] as string).slice(0, 25);
    const truncated = at('truncated.jsonl');
    fs.writeFileSync(truncated, `${kept}\n${partial}`);

    const target = at('from-truncated.db');
    const first = await runCliAsync(['import', target, truncated, '--json']);
    expect(first.status, first.stderr).toBe(0);
    const a = parseJson(first, S.importOutput);
    expect(a.batchesApplied).toBe(2);
    expect(a.incompleteTail).toBe(cutLine + 1 - (batchLineIdx[1] as number) - 1);
    const secondBatch = parsed(batchLineIdx[1] as number);
    expect(a.projections.every((p) => p.seq === secondBatch.seq)).toBe(true);
    atSecondBatch = dumpTables(target);
    expect(atSecondBatch).not.toEqual(syncedDump);

    const second = await runCliAsync(['import', target, full, '--json']);
    expect(second.status, second.stderr).toBe(0);
    expect(parseJson(second, S.importOutput)).toMatchObject({ batchesApplied: 3, batchesSkipped: 2, incompleteTail: 0 });
    expect(dumpTables(target)).toEqual(syncedDump);
  });

  test('a malformed line stops the import with its line number, and nothing of its batch is committed', async () => {
    // The second event line of the third batch is damaged: its batch's first event must not commit either.
    const bad = (batchLineIdx[1] as number) + 2;
    expect('op' in parsed(bad - 1) && 'op' in parsed(bad)).toBe(true);
    const damaged = [...lines];
    damaged[bad] = (damaged[bad] as string).replace('"op":', '"op":{').slice(0, -1);
    const file = at('damaged.jsonl');
    fs.writeFileSync(file, `${damaged.join('\n')}\n`);

    const target = at('from-damaged.db');
    const r = await runCliAsync(['import', target, file]);
    expect(r.status, r.stderr).toBe(1);
    expectOneLineError(r, 'IMPORT_MALFORMED_LINE');
    expect(r.stderr).toContain(`${file}:${bad + 1}:`);

    const secondBatch = parsed(batchLineIdx[1] as number);
    expect(Object.values(projectionSeqs(target))).toEqual(TABLES.map(() => secondBatch.seq));
    expect(atSecondBatch, 'the truncated-import test ran first').toBeDefined();
    expect(dumpTables(target)).toEqual(atSecondBatch);

    // A line that is well-formed JSON but not an export line is refused the same way.
    damaged[bad] = JSON.stringify({ ...JSON.parse(lines[bad] as string), op: 'upsert' });
    fs.writeFileSync(file, `${damaged.join('\n')}\n`);
    const again = await runCliAsync(['import', target, file]);
    expect(again.status, again.stderr).toBe(1);
    expectOneLineError(again, 'IMPORT_MALFORMED_LINE');
    expect(again.stderr).toContain(`${file}:${bad + 1}:`);
    expect(dumpTables(target)).toEqual(atSecondBatch);
  });
});
