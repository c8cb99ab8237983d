import fs from 'node:fs';
import path from 'node:path';
import { InvalidInputError } from '../errors.ts';
import { shellWord } from '../sqlite/index.ts';

/*
 * The segments of `sluice export --format segment` (docs/segment.md): a
 * folder with one segment per export run, named by its seq range
 * (`<from>-<to>.segment`, each zero-padded to 20 digits) so that name order
 * is seq order. Import takes the folder, or one segment.
 */

export const SEGMENT_EXT = '.segment';

/** The file name of a segment covering (fromSeq, toSeq]. */
export function segmentName(fromSeq: number, toSeq: number): string {
  const pad = (n: number) => String(n).padStart(20, '0');
  return `${pad(fromSeq)}-${pad(toSeq)}${SEGMENT_EXT}`;
}

/** One segment file, or a folder's segments in name (seq) order. */
export function segmentFiles(fileOrDir: string): string[] {
  if (!fs.statSync(fileOrDir).isDirectory()) return [fileOrDir];
  return fs
    .readdirSync(fileOrDir)
    .filter((f) => f.endsWith(SEGMENT_EXT))
    .sort()
    .map((f) => path.join(fileOrDir, f));
}

/**
 * A folder with no segment in it and no export cursor beside it (the
 * folder a JSONL export was written into, the wrong folder) is no export:
 * IMPORT_NOT_FOUND, naming a JSONL file in it to import instead, where
 * there is one.
 */
export function noSegmentsIn(dir: string, target: string, cursor: string): InvalidInputError {
  const jsonl = fs
    .readdirSync(dir)
    .filter((f) => f.endsWith('.jsonl'))
    .sort()[0];
  const fix =
    jsonl === undefined
      ? 'Pass the folder sluice export --format segment --out wrote, one segment of it, or a JSONL file from sluice export'
      : `To import the JSONL export in it, pass the file: sluice import ${shellWord(target)} ${shellWord(path.join(dir, jsonl))}`;
  return new InvalidInputError(
    'IMPORT_NOT_FOUND',
    `Import folder ${dir} holds no segment (*${SEGMENT_EXT}) and is no segment export's (no ${cursor} beside it): import reads a folder as the segments sluice export --format segment wrote there. ${fix}. Nothing was written.`,
  );
}

/** The seq a segment's name says it ends at (`<from>-<to>.segment`); undefined for another name. */
function toSeqOf(file: string): number | undefined {
  const m = /^(\d{20})-(\d{20})\.segment$/.exec(path.basename(file));
  return m === null ? undefined : Number(m[2]);
}

/**
 * Whether the segment folder `dir` of an export is the one its cursor file
 * describes before a run goes on from it (the JSONL check of a resumed
 * export's file, resume-point.ts): the cursor is saved after the segment
 * ending at its seq was renamed in, so a folder holding segments holds that
 * one (a run killed after the rename, before the save, left one ending
 * later too). A folder put in its place (another export's, an older copy)
 * holds no such segment: refused (EXPORT_FILE_MISMATCH), nothing written.
 * A folder holding no segment (its segments imported and removed) goes on.
 */
export function checkSegmentFolderResume(dir: string, cursorFile: string, seq: number): void {
  if (!fs.existsSync(dir)) return;
  const segments = segmentFiles(dir);
  if (segments.length === 0 || segments.some((f) => toSeqOf(f) === seq)) return;
  throw new InvalidInputError(
    'EXPORT_FILE_MISMATCH',
    `Segment folder ${dir} is not the folder its cursor file ${cursorFile} describes: it holds no segment ending at seq ${seq}, where that cursor was saved (its last is ${path.basename(segments.at(-1) as string)}). It was replaced or its segments changed since that cursor was saved; a segment written from it would follow another history's. Nothing was written. Export to a new --out (it starts with a snapshot), put back the folder this cursor file belongs to, or remove both ${dir} and ${cursorFile} and export again.`,
  );
}

/**
 * An export with no cursor file beside its folder (and no --since) starts
 * with a snapshot: written into a folder already holding segments (an
 * earlier export's, whose cursor file was removed), it put a second history
 * beside the first. Refused (EXPORT_CURSOR_MISSING), nothing written; an
 * empty folder, or one holding no segment, is exported into.
 */
export function refuseFolderWithoutCursor(dir: string, cursorFile: string): void {
  if (!fs.existsSync(dir)) return;
  const n = segmentFiles(dir).length;
  if (n === 0) return;
  const gone = fs.existsSync(cursorFile) ? `its cursor file ${cursorFile} holds no position` : `its cursor file ${cursorFile} is gone`;
  throw new InvalidInputError(
    'EXPORT_CURSOR_MISSING',
    `Segment folder ${dir} already holds ${n} segment${n === 1 ? '' : 's'} (an earlier export's) and ${gone}: without it this export starts with a snapshot, and writing that into ${dir} would put a second history beside the first. Nothing was written. Export to a new --out (it starts with a snapshot), or remove ${dir} too and export again.`,
  );
}
