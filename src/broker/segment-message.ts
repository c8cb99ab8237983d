import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Db, SqlValue } from '../sqlite/index.ts';
import { readBatch, type ChangeEvent } from '../feed/index.ts';
import { SegmentWriter } from '../export/index.ts';

/*
 * A batch window as a segment message (docs/broker.md, "Formats"): the
 * segment is written to a private temp folder, read whole, and removed.
 * The folder is made once per thread and kept for its next messages:
 * making and removing a folder for each one cost about 1.4 ms of a 6-event
 * message's 2.3 (mkdtemp, then a recursive rm), more than the segment.
 */

/** The folder this thread writes its messages' segments in (mkdtemp: private, mode 0700), removed when the thread exits. */
let folder: string | undefined;
/** Events up to which a message's segment is written in small pages, when they are small (SMALL_IMAGE_BYTES). */
const SMALL_MESSAGE_EVENTS = 100;
/** Bytes of values a row image (an event's before or after) may carry on average for small pages: four to a page. */
const SMALL_IMAGE_BYTES = 250;

/** Whether `events` go in a segment of 1 KiB pages: few, and small (their images' values, roughly counted). */
function smallPages(events: readonly ChangeEvent[]): boolean {
  if (events.length > SMALL_MESSAGE_EVENTS) return false;
  let bytes = 0;
  let images = 0;
  const add = (row: Readonly<Record<string, SqlValue>> | null) => {
    if (row === null) return;
    images++;
    for (const v of Object.values(row)) bytes += typeof v === 'string' || v instanceof Uint8Array ? v.length : 8;
  };
  for (const e of events) {
    add(e.before);
    add(e.after);
  }
  return bytes <= SMALL_IMAGE_BYTES * Math.max(1, images);
}

/** Messages made in this thread, for each segment's own name. */
let made = 0;

function messageFolder(): string {
  // Made again if something removed it (a cleaner of the temp folder).
  if (folder === undefined || !fs.existsSync(folder)) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-segment-'));
    process.once('exit', () => fs.rmSync(dir, { recursive: true, force: true }));
    folder = dir;
  }
  return folder;
}

/** The window's segment, and what the batch covers; undefined when it has no events after `cursor`. */
export function segmentMessage(
  db: Db,
  sourceId: string,
  cursor: string,
  span: number,
  through: number,
): { data: Buffer; b: { fromSeq: number; toSeq: number; cursor: string; events: number } } | undefined {
  const b = readBatch(db, cursor, { limit: span, throughSeq: through });
  if (b.toSeq === b.fromSeq) return undefined;
  const file = path.join(messageFolder(), `batch-${++made}.segment`);
  try {
    // A message of a few small events in pages of 1 KiB: 6 events take 6 KiB instead of 20 (five tables of one page
    // each), which the broker stores and every subscriber writes, reads and digests. Not with wide rows: a 2 KB row
    // takes overflow pages of 1 KiB, and the segment grows past what 4 KiB pages take.
    const w = new SegmentWriter(db, sourceId, file, smallPages(b.events) ? { pageSize: 1024 } : {});
    try {
      w.addBatch(b);
    } catch (err) {
      w.abandon();
      throw err;
    }
    // Not synced: it is read back at once, and the broker's copy is the one that counts.
    const s = w.finish(undefined, { sync: false });
    return { data: fs.readFileSync(s.file), b: { fromSeq: b.fromSeq, toSeq: b.toSeq, cursor: b.to, events: b.events.length } };
  } finally {
    fs.rmSync(file, { force: true });
    fs.rmSync(`${file}.tmp`, { force: true }); // (a writer that failed in finish)
  }
}
