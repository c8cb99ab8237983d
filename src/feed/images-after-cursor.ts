import type { Db } from '../sqlite/index.ts';
import { readTables } from '../capture/index.ts';
import type { CaptureMode } from '../capture/index.ts';
import { hasEventsBetween } from './journal-stats.ts';

/** Why the events of a table after a cursor cannot all be read as row images (imagesUnreadableAfter). */
type UnreadableImages =
  /** The table is captured in `mode` (since seq `since`): its events hold keys only, or nothing. */
  | { readonly reason: 'NEEDS_IMAGES_MODE'; readonly mode: CaptureMode; readonly since: number }
  /** The table was re-armed at seq `seq`: the events before that were recorded by the earlier capture. */
  | { readonly reason: 'TABLE_REARMED'; readonly seq: number };

/*
 * A reader that takes a table's rows as they were at a cursor from the
 * before-images of the events after it (verify's rewind) needs each of those
 * events in images mode and in the layout the table is armed with now. The
 * current arming recorded every event after its armed_seq; an event of the
 * table at or before it, and after the cursor, was recorded by an earlier
 * arming: in another mode (keys mode journals keys only, counter mode
 * nothing), or with writes that arming missed (a re-arm restores triggers
 * that were dropped). An in-place `sluice alter` re-arms too; its old-layout
 * events are alterWithOldLayoutAfter's (cursor-check.ts) to report first.
 */

/**
 * Why the events of captured table `tid` after `cursorSeq` cannot all be
 * read as images of its current columns, or undefined when they can (or the
 * table is not captured: the caller says so).
 */
export function imagesUnreadableAfter(db: Db, tid: number, cursorSeq: number): UnreadableImages | undefined {
  const t = readTables(db).find((x) => x.tid === tid);
  if (t === undefined) return undefined;
  if (t.mode !== 'images' && hasEventsBetween(db, tid, cursorSeq)) return { reason: 'NEEDS_IMAGES_MODE', mode: t.mode, since: t.armedSeq };
  if (t.armedSeq > cursorSeq && hasEventsBetween(db, tid, cursorSeq, t.armedSeq)) return { reason: 'TABLE_REARMED', seq: t.armedSeq };
  return undefined;
}
