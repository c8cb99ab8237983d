import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Db } from '../sqlite/index.ts';
import { readBatch } from '../feed/index.ts';
import { SegmentWriter } from '../export/index.ts';

/*
 * A batch window as a segment message (docs/broker.md, "Formats"): the
 * segment is written to a private temp folder, read whole, and removed.
 */

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
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-segment-'));
  try {
    const w = new SegmentWriter(db, sourceId, path.join(dir, 'batch.segment'));
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
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
