// lines the target already holds are not parsed on import, and are still checked: digest, count and order
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll, afterEach, vi } from 'vitest';
import { test, expect, describe, runPython } from '../support/fixtures.ts';
import { importFile } from '../../src/export/index.ts';
import { runCliAsync, makeDir, removeDir, trackerSource, dumpTables, syncByLibrary, scalar } from '../cli/support/cli.ts';

/*
 * An export file (a snapshot, then batches of 7 events from an external
 * writer) imported into targets that already hold part of it: its
 * snapshot, some of its batches, or (through another file cut between
 * batches of 5) part of one of its batches. Import skips parsing the lines
 * such a target holds (held-lines.ts) and must still end equal to sync,
 * apply each event once, and refuse a held line that was edited or moved.
 */

const WRITER = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
for i in range(12):
    con.execute("INSERT INTO issues (repo_id, number, title, body, state, author, score, updated_at) VALUES (1, ?, ?, NULL, 'open', 'py', ?, '2026-05-01')", (700 + i, 'held %d' % i, i / 7))
    con.commit()
for n in range(1, 9):
    con.execute("UPDATE issues SET title = title || ' (again)', score = -0.0 WHERE repo_id = 2 AND number = ?", (n,))
    con.commit()
con.execute("DELETE FROM comments WHERE id BETWEEN 30 AND 36")
con.commit()
`;

let dir: string;
let full: string;
let lines: string[];
let snapSeq: number;
let synced: Record<string, string[]>;
const at = (f: string) => path.join(dir, f);

const sha = (ls: readonly string[]) => {
  const h = createHash('sha256');
  for (const l of ls) h.update(`${l}\n`);
  return h.digest('hex');
};

/** `ls` with every snapshot and batch marker's digest made again over the lines before it (as a forger, or a careful hand edit, would). */
function redigest(ls: readonly string[]): string[] {
  const out: string[] = [];
  let section: string[] = [];
  for (const l of ls) {
    const j = JSON.parse(l) as { type?: string; digest?: string };
    if (j.type === 'snapshot' || j.type === 'batch') {
      out.push(JSON.stringify({ ...j, digest: sha(section) }));
      section = [];
    } else {
      section.push(l);
      out.push(l);
    }
  }
  return out;
}

const write = (name: string, ls: readonly string[], eol = '\n') => {
  fs.writeFileSync(at(name), ls.map((l) => `${l}${eol}`).join(''));
  return at(name);
};

const markerIdx = (type: string) => lines.flatMap((l, i) => (l.startsWith(`{"type":"${type}"`) ? [i] : []));

/** Counts JSON.parse calls on event and row lines while `fn` runs (the reader's parses of the file's lines). */
async function parsesOf<T>(fn: () => Promise<T>): Promise<{ result: T; events: number; rows: number }> {
  let events = 0;
  let rows = 0;
  const real = JSON.parse;
  const spy = vi.spyOn(JSON, 'parse').mockImplementation((text: string, reviver?: Parameters<typeof JSON.parse>[1]) => {
    if (typeof text === 'string' && text.startsWith('{"sourceId"')) events++;
    if (typeof text === 'string' && text.startsWith('{"type":"row"')) rows++;
    return real(text, reviver);
  });
  try {
    return { result: await fn(), events, rows };
  } finally {
    spy.mockRestore();
  }
}

afterEach(() => vi.restoreAllMocks());

beforeAll(async () => {
  dir = makeDir();
  const src = trackerSource(at('app.db'));
  full = at('full.jsonl');
  const first = await runCliAsync(['export', src, '--out', full, '--batch', '7', '--json']);
  expect(first.status, first.stderr).toBe(0);
  runPython(WRITER, [src]);
  const second = await runCliAsync(['export', src, '--out', full, '--batch', '7', '--json']);
  expect(second.status, second.stderr).toBe(0);
  lines = fs.readFileSync(full, 'utf8').trimEnd().split('\n');
  const snap = JSON.parse(lines[markerIdx('snapshot')[0] as number] as string) as { seq: number; cursor: string };
  snapSeq = snap.seq;
  // The same events in batches of 5, after the same snapshot: cut between two of them, a target ends inside one of full's batches.
  const since = await runCliAsync(['export', src, '--out', at('since5.jsonl'), '--since', snap.cursor, '--batch', '5', '--json']);
  expect(since.status, since.stderr).toBe(0);
  expect(await syncByLibrary(src, at('synced.db'))).toBe(0);
  synced = dumpTables(at('synced.db'));
  expect(markerIdx('batch').length).toBeGreaterThan(3);
});
afterAll(() => removeDir(dir));

describe('lines the target already holds', () => {
  test('a file imported again parses none of its event and row lines, skips every batch, and changes nothing', async () => {
    const target = at('again.db');
    const first = await parsesOf(() => importFile(target, full));
    expect(first.events).toBe(lines.filter((l) => l.startsWith('{"sourceId"')).length);
    expect(first.rows).toBe(lines.filter((l) => l.startsWith('{"type":"row"')).length);
    expect(dumpTables(target)).toEqual(synced);
    const again = await parsesOf(() => importFile(target, full));
    expect({ events: again.events, rows: again.rows }).toEqual({ events: 0, rows: 0 });
    expect(again.result.batchesApplied).toBe(0);
    expect(again.result.batchesSkipped).toBe(markerIdx('batch').length);
    expect(dumpTables(target)).toEqual(synced);
  });

  test('a target that holds part of a batch (another file cut between batches of 5) gets the rest of it once, parsing only the events it lacks', async () => {
    const target = at('middle.db');
    await importFile(target, write('snapshot-only.jsonl', lines.slice(0, (markerIdx('snapshot')[0] as number) + 1)));
    const five = fs.readFileSync(at('since5.jsonl'), 'utf8').trimEnd().split('\n');
    const fiveMarkers = five.flatMap((l, i) => (l.startsWith('{"type":"batch"') ? [i] : []));
    await importFile(target, write('since5-cut.jsonl', five.slice(0, (fiveMarkers[2] as number) + 1)));
    const held = snapSeq + 15;
    expect(scalar(target, 'SELECT min(seq) FROM main._sluice_projections')).toBe(BigInt(held));
    expect(held % 7).not.toBe(snapSeq % 7); // inside one of full's batches
    const r = await parsesOf(() => importFile(target, full));
    const lacking = lines.filter((l) => l.startsWith('{"sourceId"') && (JSON.parse(l) as { seq: number }).seq > held).length;
    expect({ events: r.events, rows: r.rows }).toEqual({ events: lacking, rows: 0 });
    expect(dumpTables(target)).toEqual(synced);
    // And once more: nothing changes.
    await importFile(target, full);
    expect(dumpTables(target)).toEqual(synced);
  });

  test('a file cut after a batch, then the whole file: the rest applies once', async () => {
    const target = at('cut.db');
    const cutAt = markerIdx('batch')[1] as number;
    await importFile(target, write('cut.jsonl', lines.slice(0, cutAt + 1)));
    const r = await importFile(target, full);
    expect(r.batchesSkipped).toBe(2);
    expect(r.batchesApplied).toBe(markerIdx('batch').length - 2);
    expect(dumpTables(target)).toEqual(synced);
  });

  test('a held event line edited after its seq is refused (IMPORT_BATCH_MISMATCH), and the target is as it was', async () => {
    const target = at('edited-event.db');
    await importFile(target, full);
    const i = (markerIdx('batch')[0] as number) - 1; // the first batch's last event
    const edited = [...lines];
    edited[i] = (lines[i] as string).replace(/"ts":(\d)/, (_m, d: string) => `"ts":${(Number(d) + 1) % 10}`);
    expect(edited[i]).not.toBe(lines[i]);
    await expect(importFile(target, write('edited-event.jsonl', edited))).rejects.toMatchObject({ code: 'IMPORT_BATCH_MISMATCH' });
    expect(dumpTables(target)).toEqual(synced);
  });

  test('a held snapshot row edited is refused (IMPORT_SNAPSHOT_MISMATCH), and the target is as it was', async () => {
    const target = at('edited-row.db');
    await importFile(target, full);
    const i = lines.findIndex((l) => l.startsWith('{"type":"row"') && /\d\D*$/.test(l));
    const edited = [...lines];
    // A value changed (its last digit), the line still well-formed: only the digest tells.
    edited[i] = (lines[i] as string).replace(/(\d)(\D*)$/, (_m, d: string, rest: string) => `${(Number(d) + 1) % 10}${rest}`);
    expect(edited[i]).not.toBe(lines[i]);
    await expect(importFile(target, write('edited-row.jsonl', edited))).rejects.toMatchObject({ code: 'IMPORT_SNAPSHOT_MISMATCH' });
    // A row line lost from the held snapshot: its count no longer matches.
    const lost = lines.filter((_, j) => j !== i);
    await expect(importFile(target, write('lost-row.jsonl', lost))).rejects.toMatchObject({ code: 'IMPORT_SNAPSHOT_MISMATCH' });
    expect(dumpTables(target)).toEqual(synced);
  });

  test('held event lines swapped, with digests made to match, are refused: their seqs are read from their bytes', async () => {
    const target = at('swapped.db');
    await importFile(target, full);
    const end = markerIdx('batch')[1] as number; // the second batch: its first two events swapped
    const start = (markerIdx('batch')[0] as number) + 1;
    const swapped = [...lines];
    [swapped[start], swapped[start + 1]] = [lines[start + 1] as string, lines[start] as string];
    expect(end - start).toBeGreaterThan(2);
    const r = importFile(target, write('swapped.jsonl', redigest(swapped)));
    await expect(r).rejects.toMatchObject({ code: 'IMPORT_BATCH_MISMATCH', message: expect.stringMatching(/out of order/) });
    expect(dumpTables(target)).toEqual(synced);
  });

  test('lines written by hand (another key order, spaces, CRLF line ends) are parsed in full: imported fresh and again, the target equals sync', async () => {
    // Every event and row line rewritten with its keys reversed and spaces; markers digested again over the new lines.
    const byHand = redigest(
      lines.map((l) => {
        const j = JSON.parse(l) as Record<string, unknown>;
        if ('type' in j && j.type !== 'row') return l;
        return JSON.stringify(Object.fromEntries(Object.entries(j).reverse()), null, 1).replace(/\n/g, '');
      }),
    );
    for (const [name, eol] of [
      ['by-hand.jsonl', '\n'],
      ['by-hand-crlf.jsonl', '\r\n'],
    ] as const) {
      const target = at(`${name}.db`);
      const file = write(name, byHand, eol);
      const first = await importFile(target, file);
      expect(first.batchesApplied).toBe(markerIdx('batch').length);
      expect(dumpTables(target)).toEqual(synced);
      const again = await importFile(target, file);
      expect(again.batchesApplied).toBe(0);
      expect(dumpTables(target)).toEqual(synced);
    }
    // The exporter's own file with CRLF line ends digests as before (the line's text, without the "\r").
    const crlf = at('crlf.db');
    await importFile(crlf, write('crlf.jsonl', lines, '\r\n'));
    expect(dumpTables(crlf)).toEqual(synced);
  });
});
