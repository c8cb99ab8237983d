import type { Db, SqlValue } from '../sqlite/index.ts';
import { readBatch, type ChangeEvent } from '../feed/index.ts';
import { SegmentWriter } from '../export/index.ts';

/*
 * A batch window as a segment message (docs/broker.md, "Formats"): the
 * segment is made in memory (SegmentWriter with no file) and its bytes are
 * the message. Written to a file, read back and removed, a message of a few
 * events cost the publisher a file system's work for each one.
 */

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
  // A message of a few small events in pages of 1 KiB: 6 events take 6 KiB instead of 20 (five tables of one page
  // each), which the broker stores and every subscriber reads and digests. Not with wide rows: a 2 KB row
  // takes overflow pages of 1 KiB, and the segment grows past what 4 KiB pages take.
  const w = new SegmentWriter(db, sourceId, null, smallPages(b.events) ? { pageSize: 1024 } : {});
  try {
    w.addBatch(b);
  } catch (err) {
    w.abandon();
    throw err;
  }
  const { data } = w.finishInMemory();
  return { data, b: { fromSeq: b.fromSeq, toSeq: b.toSeq, cursor: b.to, events: b.events.length } };
}
