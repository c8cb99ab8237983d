// The face of src/sqlite/: what other folders and the tests import of it (docs/architecture.md, "Faces").
// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.

export { folderNotWritable, requireWriteAccess, writeAccessProblem } from './access.ts';
export { affinityMisfits, affinityOf, canHoldNegativeZero } from './affinity.ts';
export type { Affinity, AffinityMisfit } from './affinity.ts';
export { allOf, anyOf } from './balanced.ts';
export { IMPORT_CHECKPOINT_PAGES, catchUpCacheSizes, useCatchUpCaches } from './catch-up-caches.ts';
export {
  INT64_OUT_OF_RANGE,
  RawText,
  fitsInt64,
  fromDriver,
  fromJsonValue,
  isRawText,
  jsonValueSchema,
  namedPlaceholderFor,
  placeholderFor,
  sameValue,
  toBindable,
  toJsonValue,
} from './codec.ts';
export type { JsonValue, SqlValue } from './codec.ts';
export { collationKnown, collationOf, columnCollations, columnDefinitionNames, virtualTableArguments } from './collations.ts';
export type { SqlToken } from './collations.ts';
export { collationSql, columnDecl, declaredType, isAnyType } from './column-decl.ts';
export { closeDatabase, connectionState, slot } from './connection-state.ts';
export { hotJournal, noRoomToOpen, openDatabase, openImage, useWal } from './connection.ts';
export type { OpenOptions } from './connection.ts';
export type { Db } from './db.ts';
export { checkHeldFile, checkSameFile, checkSameFileStamp, fileStamp, heldFile, pathIdentity, sameFile } from './file-identity.ts';
export type { FileIdentity } from './file-identity.ts';
export {
  describeTable,
  expressionUniqueIndexes,
  findObjects,
  foreignKeys,
  listTables,
  primaryKeyCollations,
  schemaFingerprint,
  schemaVersion,
  uniqueIndexes,
} from './introspect.ts';
export type { TableInfo, UniqueIndexInfo } from './introspect.ts';
export { removeMadeDatabase, requireOutputPath } from './output-path.ts';
export { ownRecord, setOwn } from './own-record.ts';
export { describeHolder, lockHeld, tryProcessLock } from './process-lock.ts';
export type { ProcessLock } from './process-lock.ts';
export { runQuery } from './query.ts';
export type { QueryResult } from './query.ts';
export { QuietHold, holdQuietly, readQuietly, readQuietlySync } from './quiet-hold.ts';
export { foldIdent, quoteIdent, quoteString } from './quote.ts';
export { fileKey, realFilePath, sameDatabaseFile } from './real-path.ts';
export { parseRenameColumn } from './rename-column.ts';
export { renameTable } from './rename.ts';
export { openUntouched } from './schema-copy.ts';
export { checkpointScrubbed, scrubCheckpointOwed, scrubbing } from './scrub.ts';
export { reinitCommand, repairAction, repairOf, shellCommand, shellWord } from './shell-word.ts';
export { adoptShmFiles, lendShmFiles, ownShmFilesIn } from './shm-files.ts';
export type { HeldShm } from './shm-files.ts';
export { cachedStatement } from './statement-cache.ts';
export type { RowMode } from './statement-cache.ts';
export { statementWrites, triggerWrites, virtualTableObject } from './statement-writes.ts';
export { forEachStatement, isBlank, leadingKeywords, refuseTransactionControl } from './statements.ts';
export { StoredRow, either, jsonObject, stringList } from './stored-row.ts';
export {
  TEXT_ENCODINGS,
  encodingMismatch,
  hasUnpairedSurrogate,
  lossyTextTest,
  matchTargetEncoding,
  textEncoding,
  textFromDbBytes,
  unpairedToDb,
} from './text-encoding.ts';
export type { TextEncoding } from './text-encoding.ts';
export {
  beginHeld,
  commitHeld,
  readSession,
  readSessionSync,
  rollbackOpen,
  withReadTransaction,
  withWriteTransaction,
  writeAlone,
  writeTransaction,
  writeTransactionSync,
} from './transaction.ts';
export { triggerTiming, triggerUpdateOf } from './trigger-timing.ts';
export { WalFiles } from './wal-frames.ts';
export type { WalCommit, WalEnd } from './wal-frames.ts';
export { dropWorkTables, emptyWorkTables, workTable, workTableName } from './work-tables.ts';
export { takeWriteLock } from './write-lock.ts';

// Not imported by other folders of src/: for the tests (and bench/, scripts/), which import the folder only here.
export { mayBeLossyText, sameRow, storageClass, textFromBytes } from './codec.ts';
export { adoptEncoding } from './text-encoding.ts';
