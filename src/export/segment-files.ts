import fs from 'node:fs';
import path from 'node:path';

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
