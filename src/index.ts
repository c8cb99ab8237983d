// The public API of sluice. Everything else under src/ is internal.
export { SluiceError, CaptureRefusedError, FailClosedError, InvalidInputError, FileBusyError, FileFullError, errorCode } from './errors.ts';
export {
  REASONS,
  aliasesOf,
  aliasFields,
  currentCode,
  isReasonCode,
  repairFor,
  type Reason,
  type ReasonCode,
  type ReasonInfo,
  type ReasonKind,
  type ReasonOf,
  type RepairVars,
} from './reasons.ts';

export { openDatabase } from './sqlite/connection.ts';
export { withReadTransaction, withWriteTransaction } from './sqlite/transaction.ts';
export type { Db, OpenOptions } from './sqlite/connection.ts';
export { quoteIdent } from './sqlite/quote.ts';
export { checkHeldFile, heldFile } from './sqlite/file-identity.ts';
export type { ProcessLock } from './sqlite/process-lock.ts';
export { runQuery } from './sqlite/query.ts';
export type { QueryResult } from './sqlite/query.ts';
export { RawText, sameValue, sameRow, storageClass, toJsonValue, fromJsonValue, jsonValueSchema } from './sqlite/codec.ts';
export type { SqlValue, StorageClass, JsonValue } from './sqlite/codec.ts';

export { openSource } from './capture/open-source.ts';
export { enable } from './capture/enable.ts';
export { enableCommand, enableHint } from './capture/enable-hint.ts';
export type { EnableOptions, EnableResult, RearmedTable } from './capture/enable.ts';
export { disable, disableTables } from './capture/disable.ts';
export type { DisableResult, DisabledTable } from './capture/disable.ts';
export { bump } from './capture/bump.ts';
export { alter } from './capture/source-alter.ts';
export type { AlterOptions, AlterResult, AlteredTable } from './capture/source-alter.ts';
export { readDdlLog } from './capture/ddl-log.ts';
export type { DdlRecord, DdlTableRecord, TableChange } from './capture/ddl-log.ts';
export { forecastAlter, alterRules } from './feed/alter-forecast.ts';
export type { ConsumerForecast, TableForecast } from './feed/alter-forecast.ts';
export { strip } from './capture/strip.ts';
export { status } from './capture/status.ts';
export type { CaptureStatus, TableStatus, ConsumerStatus } from './capture/status.ts';
export { verifyCapture } from './capture/arming.ts';
export type { CaptureVerification, TableArming, UnarmedReason } from './capture/arming.ts';
export { prune } from './capture/prune.ts';
export type { PruneResult } from './capture/prune.ts';
export { DEFAULT_RETENTION, MIN_RETENTION, CAPTURE_MODES } from './capture/schema.ts';
export type { CaptureMode } from './capture/schema.ts';
export type { CapturedTable, CaptureState } from './capture/catalog.ts';

export { encodeCursor, decodeCursor } from './feed/cursor.ts';
export type { Cursor, FileIdentity } from './feed/cursor.ts';
export { validateCursor } from './feed/cursor-check.ts';
export type { CursorValidation, RebuildReason } from './feed/cursor-check.ts';
export { snapshot, streamTable } from './feed/snapshot.ts';
export type { SnapshotResult, SnapshotHandlers } from './feed/snapshot.ts';
export { readBatch, journalStartCursor } from './feed/batch.ts';
export type { Batch, BatchOptions } from './feed/batch.ts';
export type { ChangeEvent, InsertEvent, UpdateEvent, DeleteEvent, Row } from './feed/events.ts';
export { changedSince } from './feed/changed-since.ts';
export type { ChangedSince } from './feed/changed-since.ts';
export { updatesSince, updatesPage } from './feed/updates-since.ts';
export type { RowChange, UpdatesSinceOptions, UpdatesPage } from './feed/updates-since.ts';
export { acknowledge, forget, forgetConsumer } from './feed/acknowledge.ts';
export type { AcknowledgedFor } from './feed/acknowledge.ts';
export { readConsumers, parseConsumerName, consumerTargets } from './capture/consumers.ts';
export type { ConsumerRow, TargetState } from './capture/consumers.ts';
export { eventLineSchema, cursorLineSchema, eventToLine } from './feed/jsonl.ts';
export type { EventLine } from './feed/jsonl.ts';

export { Syncer, sync } from './apply/sync/sync.ts';
export type { SyncOptions, SyncReport, ProjectionReport, SyncProgress } from './apply/sync/sync.ts';
export { MIRROR_ALL } from './apply/sync/projection-set.ts';
export type { Unmirrored } from './apply/sync/projection-set.ts';
export type { DefinitionInput } from './apply/sync/sync-definitions.ts';
export type { StepOutcome } from './apply/sync/step.ts';
export { verify } from './apply/check/verify.ts';
export { projectionWrites } from './apply/target/projection-writes.ts';
export { protect } from './apply/edits/protect.ts';
export type { ProtectReport } from './apply/edits/protect.ts';
export type { ProjectionWrite } from './apply/target/projection-writes.ts';
export type { VerifyOptions, VerifyProgress } from './apply/check/verify.ts';
export type { VerifyReport, ProjectionVerification, VerifyDiff } from './apply/check/verify.ts';
export { explainAlter } from './apply/evolution/explain.ts';
export { alterWithForecast } from './apply/evolution/alter-targets.ts';
export type { AlterWithForecast, TargetForecast } from './apply/evolution/alter-targets.ts';
export type { ExplainOptions, ExplainReport, ProjectionExplanation, DefinitionInputs } from './apply/evolution/explain.ts';
export type { RebuildCost } from './apply/evolution/explain-facts.ts';
export { classifyChange, DEFAULT_ORACLE } from './projection/evolution/classify.ts';
export type {
  AlterClassification,
  AlterDecision,
  AlterFacts,
  AlterReasonCode,
  AlterStateOracle,
  ClassifiedChange,
  CursorFact,
  StateProof,
  StoredProjection,
  UncompiledProjection,
} from './projection/evolution/classify.ts';
export { STATE_PARTS } from './projection/evolution/changes.ts';
export type { AlterChange, StatePart } from './projection/evolution/changes.ts';
export { kindRules } from './projection/kinds/registry.ts';
export type { KindAlterRules, Proof } from './projection/evolution/kinds.ts';
export { readProjections, repairAction, shellWord } from './apply/target/target-meta.ts';
export type { ProjectionRecord, ProjectionState } from './apply/target/target-meta.ts';
export { health } from './apply/check/health.ts';
export { dropProjection } from './apply/target/drop.ts';
export type { LostProjection } from './apply/target/consumers.ts';
export { followerLockFile, lockFollower } from './apply/sync/follower-lock.ts';
export type { DropResult } from './apply/target/drop.ts';
export type { FailureHealth, FedLag, HealthFedBy, HealthOptions, HealthReport, ProjectionHealth } from './apply/check/health.ts';
export type { FedBy } from './apply/target/fed-by.ts';
export { withoutCredentials } from './apply/target/fed-by.ts';
export { parseDefinition, loadDefinitions, defaultMirror, projectionDefinitionSchema } from './projection/definition.ts';
export type {
  ProjectionDefinition,
  ProjectionDefinitionInput,
  MirrorDefinition,
  MapDefinition,
  Fts5Definition,
  CustomDefinition,
  CustomHandler,
  CustomContext,
} from './projection/definition.ts';

export { exportOnce, LineSink } from './export/export.ts';
export {
  cursorFileFor,
  positionOf,
  readResumePoint,
  saveResumePoint,
  saveSnapshotStart,
  truncateToResumePoint,
} from './export/resume-point.ts';
export type { ResumePoint } from './export/resume-point.ts';
export type { ExportOptions, ExportResult } from './export/export.ts';
export { importFile, importStream } from './export/import.ts';
export type { ImportOptions, ImportReport, ItemStream } from './export/import.ts';

export { Publisher } from './broker/publish.ts';
export type { PublishOptions, PublishPass, PublishedSnapshotReport } from './broker/publish.ts';
export { subscribe } from './broker/subscribe.ts';
export { openStreamLag, readRecordedStreamLags, readStreamLags } from './broker/stream-lag.ts';
export type { StreamLag, StreamLagReader } from './broker/stream-lag.ts';
export type { SubscribeOptions, SubscribeReport, SubscribeStart, SubscribedBatch } from './broker/subscribe.ts';
export { encodeToken, subjectsOf, defaultStreamName, batchMsgId } from './broker/subjects.ts';
