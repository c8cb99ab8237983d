// The face of src/export/: what other folders and the tests import of it (docs/architecture.md, "Faces").
// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.

export { readCheckedLines } from './checked-reader.ts';
export type { ExportItem, ReadOptions, ReadTotals, SegmentRef } from './checked-reader.ts';
export { lockExport } from './export-lock.ts';
export { LineSink, checkResumedTables, exportOnce, writeBatch, writeSnapshot } from './export.ts';
export type { ExportOptions, ExportResult, LineWriter } from './export.ts';
export type { ImportOptions, ImportReport, ItemStream } from './import-types.ts';
export { importFile, importStream } from './import.ts';
export {
  cursorFileFor,
  positionOf,
  readResumePoint,
  refuseWithoutCursor,
  replaceFile,
  saveResumePoint,
  saveSnapshotStart,
  truncateToResumePoint,
} from './resume-point.ts';
export { checkSegment, checkSegmentBytes } from './segment-check.ts';
export { exportSegment } from './segment-export.ts';
export { checkSegmentFolderResume, refuseFolderWithoutCursor } from './segment-files.ts';
export { segmentItems } from './segment-read.ts';
export { SegmentWriter } from './segment-writer.ts';

// Not imported by other folders of src/: for the tests (and bench/, scripts/), which import the folder only here.
export { exportLockFile } from './export-lock.ts';
export { isSimpleEventLine, isSimpleRowLine } from './fast-lines.ts';
export { FORMAT_VERSION, exportLineSchema, rowLineSchema } from './format.ts';
export type { ExportLine } from './format.ts';
export { eventPrefix, eventSeqOf, isRowLineOf, rowPrefix } from './held-lines.ts';
export { LineDigest } from './line-digest.ts';
export { FileLines, lineText } from './raw-lines.ts';
export type { CheckedSegment } from './segment-check.ts';
