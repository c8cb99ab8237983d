import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { runPython } from '../../support/fixtures.ts';
import { runCliAsync } from '../../cli/support/cli.ts';
import { checkSegmentBytes, importStream, segmentItems, type CheckedSegment, type ImportReport } from '../../../src/export/index.ts';

/** A Python script that runs a SQL script (argv[2]) on a file (argv[1]) with Python's sqlite3: another program's edit of a segment. */
export const EDIT = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.executescript(sys.argv[2])
con.commit()
con.close()
`;

/** The segment files of an export folder, in name order (the order they import in). */
export function segmentsOf(folder: string): string[] {
  return fs
    .readdirSync(folder)
    .filter((f) => f.endsWith('.segment'))
    .sort()
    .map((f) => path.join(folder, f));
}

/** Exports `src` into `folder` as a segment (its snapshot), runs `writer` (Python, argv[1] the source), and exports again (its events). */
export async function exportSnapshotThenEvents(src: string, folder: string, writer: string): Promise<void> {
  const r1 = await runCliAsync(['export', src, '--out', folder, '--format', 'segment']);
  expect(r1.status, r1.stderr).toBe(0);
  runPython(writer, [src]);
  const r2 = await runCliAsync(['export', src, '--out', folder, '--format', 'segment']);
  expect(r2.status, r2.stderr).toBe(0);
}

/** A checked segment imported into `target` as one stream, as import and a subscriber import it. */
export function importChecked(target: string, c: CheckedSegment): Promise<ImportReport> {
  return importStream(target, {
    label: c.file,
    size: () => c.size,
    encoding: c.meta.encoding,
    atHand: true,
    read: (o) => segmentItems(c, o),
  });
}

/** Each segment of `folder`, in order, read from its bytes as a broker's message is (checkSegmentBytes), imported into `target`. */
export async function importInMemory(target: string, folder: string): Promise<void> {
  for (const f of segmentsOf(folder)) await importChecked(target, checkSegmentBytes(`message ${path.basename(f)}`, fs.readFileSync(f)));
}
