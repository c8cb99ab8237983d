import fs from 'node:fs';
import path from 'node:path';
import type { Db } from '../sqlite/index.ts';
import { readState, unreadableCapture } from '../capture/index.ts';
import { readBatch } from '../feed/index.ts';
import { checkResumedTables, type ExportOptions, type ExportResult } from './export.ts';
import { SegmentWriter } from './segment-writer.ts';
import { segmentName } from './segment-files.ts';

/** Events per batch inside an exported segment by default: the batch sync applies for a mirror (one target transaction each on import). */
export const SEGMENT_BATCH = 100_000;

/**
 * `export --format segment` (docs/segment.md): one segment per run in the
 * folder `dir`, holding a snapshot (unless `since` is given) and every
 * retained event after it, in batches of `batchSize` (default
 * SEGMENT_BATCH). The segment is written aside and renamed into place when
 * whole; then `onDurable` gets the cursor to continue from (`onSnapshot`,
 * just before a snapshot segment is renamed into place). A run with
 * nothing new writes nothing.
 */
export function exportSegment(
  db: Db,
  dir: string,
  options: ExportOptions,
  onDurable: (cursor: string) => void,
  onSnapshot?: () => void,
): ExportResult & { file?: string } {
  if (options.since !== undefined) checkResumedTables(options.since, options.tables, 'the cursor it resumes from');
  const state = readState(db);
  // Before the folder is made: a refused export makes nothing.
  if (state === undefined) throw unreadableCapture(db, 'CAPTURE_ABSENT');
  fs.mkdirSync(dir, { recursive: true });
  const w = new SegmentWriter(db, state.sourceId, path.join(dir, '.writing.segment'));
  let cursor = options.since;
  let rows = 0;
  let batches = 0;
  try {
    if (cursor === undefined) {
      const snap = w.addSnapshot(options.tables);
      cursor = snap.cursor;
      rows = snap.rows;
    }
    for (;;) {
      const b = readBatch(db, cursor, { limit: options.batchSize ?? SEGMENT_BATCH });
      if (b.toSeq === b.fromSeq) break;
      w.addBatch(b);
      batches++;
      cursor = b.to;
      if (!b.hasMore) break;
    }
  } catch (err) {
    w.abandon();
    throw err;
  }
  const range = w.range;
  if (range === undefined || (options.since !== undefined && batches === 0)) {
    w.abandon();
    return { cursor: cursor as string, rows: 0, events: 0, batches: 0 };
  }
  // A snapshot segment: its caller records that one is being put in place (DIR.cursor's START) before it is, so a run
  // killed between the rename and onDurable is resumed, not taken for a folder whose cursor file was removed.
  if (options.since === undefined) onSnapshot?.();
  const s = w.finish(path.join(dir, segmentName(range.fromSeq, range.toSeq)));
  syncDir(dir);
  onDurable(cursor as string);
  return { cursor: cursor as string, rows, events: s.events, batches, file: s.file };
}

function syncDir(dir: string): void {
  try {
    const fd = fs.openSync(dir, 'r');
    try {
      fs.fsyncSync(fd);
    } finally {
      fs.closeSync(fd);
    }
  } catch {
    /* not every platform syncs a folder */
  }
}
