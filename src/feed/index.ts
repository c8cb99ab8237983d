// The face of src/feed/: what other folders and the tests import of it (docs/architecture.md, "Faces").
// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.

export { acknowledge, forget, forgetConsumer } from './acknowledge.ts';
export type { AcknowledgedFor } from './acknowledge.ts';
export { alterRules, forecastAlter } from './alter-forecast.ts';
export type { ConsumerForecast, TableForecast } from './alter-forecast.ts';
export { batchEnd, journalStartCursor, readBatch } from './batch.ts';
export type { Batch, BatchOptions } from './batch.ts';
export { decodedBatch, journalBatch, markReads } from './change-batch.ts';
export type { ChangeBatch } from './change-batch.ts';
export { changedSince } from './changed-since.ts';
export type { ChangedSince } from './changed-since.ts';
export { altersSince, lineageSince } from './column-lineage.ts';
export type { ColumnOrigin } from './column-lineage.ts';
export { alterWithOldLayoutAfter, cursorContinues, streamContinues, validateCursor } from './cursor-check.ts';
export type { Continuation, CursorValidation, RebuildReason } from './cursor-check.ts';
export { decodeCursor, encodeCursor } from './cursor.ts';
export type { Cursor, FileIdentity } from './cursor.ts';
export { decodedRows, storable } from './decoded-rows.ts';
export { journalEvents } from './event-relation.ts';
export type { EventRelation } from './event-relation.ts';
export { fullImageEvent, keyImageEvent } from './events.ts';
export type { ChangeEvent, DeleteEvent, EventOp, InsertEvent, Row, UpdateEvent } from './events.ts';
export { imagesUnreadableAfter } from './images-after-cursor.ts';
export { eventsAfter, firstEventMsAfter, lastJournalSeq } from './journal-stats.ts';
export { eventLineSchema, eventToLine, lineToEvent, lineToRow } from './jsonl.ts';
export type { EventLine } from './jsonl.ts';
export { snapshot, sourceRows } from './snapshot.ts';
export type { SnapshotHandlers, SnapshotResult, SnapshotRows } from './snapshot.ts';
export { cursorToken, readSourceView } from './source-view.ts';
export type { SourceView } from './source-view.ts';
export { updatesPage, updatesSince } from './updates-since.ts';
export type { RowChange, UpdatesPage, UpdatesSinceOptions } from './updates-since.ts';

// Not imported by other folders of src/: for the tests (and bench/, scripts/), which import the folder only here.
export { readEventsInRange } from './batch.ts';
export { parseCursor } from './cursor.ts';
export { cursorLineSchema } from './jsonl.ts';
