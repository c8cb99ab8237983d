// an export resumed over a file (or folder) that is not its cursor file's is refused, nothing written
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../support/fixtures.ts';
import { cli } from '../apply/support/target.ts';
import { dumpTables } from '../cli/support/cli.ts';
import { readResumePoint } from '../../src/export/index.ts';

/*
 * A resumed export truncates its file to the byte offset its FILE.cursor
 * saved, then appends. Put another export of the same source in its place
 * (a newer copy moved over it, the old FILE.cursor kept) and the offset
 * fell mid-line: the file was cut there (events already exported thrown
 * away, half a line left), the new batches appended after it, exit 0, and
 * every import of it then stopped at that line (IMPORT_MALFORMED_LINE).
 * Only a file shorter than the offset was refused. Now the resumed export
 * first checks that the offset ends a line and that the line is the marker
 * of the cursor it saved (its seq and source): otherwise EXPORT_FILE_MISMATCH,
 * exit 1, naming the file, its cursor file and the fix, and nothing written.
 * A segment folder likewise: the folder must hold the segment that ends at
 * its cursor's seq (unless it holds no segment, its segments imported and
 * removed).
 */

function source(tmp: string): string {
  const src = path.join(tmp, 'src.db');
  runSqliteCli(src, "CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT); INSERT INTO t VALUES (1, 'a'), (2, 'b');");
  expect(cli(['enable', src, 't']).status).toBe(0);
  return src;
}

function ok(args: string[]): void {
  const r = cli(args);
  expect(r.status, r.stderr).toBe(0);
}

/** The folder's files (or the file) and the cursor file beside it, with their bytes. */
function bytesOf(p: string): Record<string, string> {
  const out: Record<string, string> = {};
  const files = fs.statSync(p).isDirectory() ? fs.readdirSync(p).map((f) => path.join(p, f)) : [p];
  for (const f of [...files, `${p}.cursor`]) if (fs.existsSync(f)) out[f] = fs.readFileSync(f).toString('base64');
  return out;
}

function refused(src: string, out: string, seg: string[], why: RegExp): void {
  const before = bytesOf(out);
  const r = cli(['export', src, '--out', out, ...seg]);
  expect(r.status, r.stderr).toBe(1);
  expect(r.stderr).toContain('EXPORT_FILE_MISMATCH');
  expect(r.stderr).toContain(out);
  expect(r.stderr).toContain(`${out}.cursor`);
  expect(r.stderr).toMatch(why);
  expect(r.stderr).toMatch(/new --out/);
  expect(bytesOf(out)).toEqual(before);
}

describe('sluice export resumed over another file', () => {
  test('jsonl: a newer export of the same source put in its place (the offset mid-line) is refused, nothing cut or appended', ({ tmp }) => {
    const src = source(tmp);
    const e = path.join(tmp, 'e.jsonl');
    const g = path.join(tmp, 'g.jsonl');
    ok(['export', src, '--out', e]);
    for (const i of [3, 4, 5]) runSqliteCli(src, `INSERT INTO t VALUES (${i}, 'value ${i}')`);
    ok(['export', src, '--out', e]);
    ok(['export', src, '--out', g]);
    for (const i of [6, 7, 8]) runSqliteCli(src, `INSERT INTO t VALUES (${i}, 'value ${i}')`);
    ok(['export', src, '--out', g, '--batch', '1']);
    fs.copyFileSync(g, e);
    const offset = readResumePoint(`${e}.cursor`).offset as number;
    expect(fs.readFileSync(e)[offset - 1]).not.toBe(0x0a); // the scenario: the old offset falls inside a line of the new file
    runSqliteCli(src, "INSERT INTO t VALUES (9, 'x')");
    refused(src, e, [], /middle of a line/);

    // As it says: a new --out, which imports to the source.
    ok(['export', src, '--out', path.join(tmp, 'new.jsonl')]);
    ok(['import', path.join(tmp, 'tgt.db'), path.join(tmp, 'new.jsonl')]);
    expect(dumpTables(path.join(tmp, 'tgt.db'), ['t'])).toEqual(dumpTables(src, ['t']));
  });

  test("jsonl: the offset at a line's end, but the line there not the cursor's marker, is refused", ({ tmp }) => {
    const src = source(tmp);
    const e = path.join(tmp, 'e.jsonl');
    ok(['export', src, '--out', e]);
    for (const i of [3, 4, 5]) runSqliteCli(src, `INSERT INTO t VALUES (${i}, 'v')`);
    ok(['export', src, '--out', e, '--batch', '1']);
    const offset = readResumePoint(`${e}.cursor`).offset as number;
    // Another file whose byte at the offset ends a line: the same lines, the last marker swapped for an event line
    // padded to its length (an edited file, or another history's with lines of other lengths).
    const lines = fs.readFileSync(e, 'utf8').split('\n').slice(0, -1);
    const marker = lines.at(-1) as string;
    const event = lines.at(-2) as string;
    const padded = `${event.slice(0, -1)}${' '.repeat(marker.length - event.length)}}`;
    fs.writeFileSync(e, [...lines.slice(0, -1), padded, ''].join('\n'));
    expect(fs.statSync(e).size).toBe(offset);
    runSqliteCli(src, "INSERT INTO t VALUES (9, 'x')");
    refused(src, e, [], /not the batch or snapshot line/);
  });

  test('jsonl: a killed run, or a run resumed from its own file, still resumes (the check holds for the file it wrote)', ({ tmp }) => {
    const src = source(tmp);
    const e = path.join(tmp, 'e.jsonl');
    ok(['export', src, '--out', e]);
    runSqliteCli(src, "INSERT INTO t VALUES (3, 'c')");
    ok(['export', src, '--out', e]);
    // A killed run's torn tail after the offset: cut, and written again.
    fs.appendFileSync(e, '{"op":"insert","tab');
    runSqliteCli(src, "INSERT INTO t VALUES (4, 'd')");
    ok(['export', src, '--out', e]);
    ok(['import', path.join(tmp, 'tgt.db'), e]);
    expect(dumpTables(path.join(tmp, 'tgt.db'), ['t'])).toEqual(dumpTables(src, ['t']));
  });

  test("segment: a folder put in its place that holds no segment ending at its cursor's seq is refused; an emptied folder resumes", ({
    tmp,
  }) => {
    const src = source(tmp);
    const seg = ['--format', 'segment'];
    const d = path.join(tmp, 'segs');
    const g = path.join(tmp, 'other');
    ok(['export', src, '--out', g, ...seg]); // another export, made first: its segment ends before d's cursor
    runSqliteCli(src, "INSERT INTO t VALUES (3, 'c')");
    ok(['export', src, '--out', d, ...seg]);
    runSqliteCli(src, "INSERT INTO t VALUES (4, 'd')");
    ok(['export', src, '--out', d, ...seg]);
    fs.rmSync(d, { recursive: true });
    fs.cpSync(g, d, { recursive: true });
    runSqliteCli(src, "INSERT INTO t VALUES (5, 'e')");
    refused(src, d, seg, /no segment ending at seq/);

    // Its segments imported and removed: the run goes on from its cursor into the empty folder.
    for (const f of fs.readdirSync(d)) fs.rmSync(path.join(d, f));
    ok(['export', src, '--out', d, ...seg]);
    expect(fs.readdirSync(d).filter((f) => f.endsWith('.segment'))).toHaveLength(1);
  });
});
