// The main entry of sluice, `import ... from 'sluice'`: what a user of the
// library calls (README.md and docs/*.md show it), and the types those calls
// take and return. It loads no NATS client: the broker is its own entry,
// `sluice/broker` (src/broker/index.ts). What only the CLI needs is in
// src/internal.ts, which package.json does not export. docs/architecture.md,
// "Entries", has the rule.
export { SluiceError, CaptureRefusedError, FailClosedError, InvalidInputError, FileBusyError, FileFullError, errorCode } from './errors.ts';
export {
  REASONS,
  aliasesOf,
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
export type { Db, OpenOptions } from './sqlite/connection.ts';
export type { ProcessLock } from './sqlite/process-lock.ts';
export { runQuery } from './sqlite/query.ts';
export type { QueryResult } from './sqlite/query.ts';
export { RawText, toJsonValue, fromJsonValue, jsonValueSchema } from './sqlite/codec.ts';
export type { SqlValue, JsonValue } from './sqlite/codec.ts';

export { openSource } from './capture/open-source.ts';
export { enable } from './capture/enable.ts';
export type { EnableOptions, EnableResult, RearmedTable } from './capture/enable.ts';
export { disable } from './capture/disable.ts';
export type { DisableResult, DisabledTable } from './capture/disable.ts';
export { bump } from './capture/bump.ts';
export { alter } from './capture/source-alter.ts';
export type { AlterOptions, AlterResult, AlteredTable } from './capture/source-alter.ts';
export type { TableChange } from './capture/ddl-log.ts';
export { forecastAlter } from './feed/alter-forecast.ts';
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
export type { ConsumerRow, TargetState } from './capture/consumers.ts';

export { decodeCursor } from './feed/cursor.ts';
export type { Cursor, FileIdentity } from './feed/cursor.ts';
export { validateCursor } from './feed/cursor-check.ts';
export type { CursorValidation, RebuildReason } from './feed/cursor-check.ts';
export { snapshot } from './feed/snapshot.ts';
export type { SnapshotResult, SnapshotHandlers } from './feed/snapshot.ts';
export { readBatch, journalStartCursor } from './feed/batch.ts';
export type { Batch, BatchOptions } from './feed/batch.ts';
export type { ChangeEvent, InsertEvent, UpdateEvent, DeleteEvent, Row } from './feed/events.ts';
export { changedSince } from './feed/changed-since.ts';
export type { ChangedSince } from './feed/changed-since.ts';
export { updatesSince, updatesPage } from './feed/updates-since.ts';
export type { RowChange, UpdatesSinceOptions, UpdatesPage } from './feed/updates-since.ts';
export { acknowledge, forget } from './feed/acknowledge.ts';
export type { AcknowledgedFor } from './feed/acknowledge.ts';
export { eventLineSchema } from './feed/jsonl.ts';
export type { EventLine } from './feed/jsonl.ts';

export { Syncer, sync } from './apply/sync/sync.ts';
export type { SyncOptions, SyncReport, ProjectionReport, SyncProgress } from './apply/sync/sync.ts';
export type { Unmirrored } from './apply/projections/projection-set.ts';
export type { DefinitionInput } from './apply/projections/sync-definitions.ts';
export type { LostProjection } from './apply/target/consumers.ts';
export { lockFollower } from './apply/sync/follower-lock.ts';
export { verify } from './apply/check/verify.ts';
export type { VerifyOptions, VerifyProgress } from './apply/check/verify.ts';
export type { VerifyReport, ProjectionVerification, VerifyDiff } from './apply/check/verify.ts';
export { protect } from './apply/edits/protect.ts';
export type { ProtectReport } from './apply/edits/protect.ts';
export { explainAlter } from './apply/evolution/explain.ts';
export type { ExplainOptions, ExplainReport, ProjectionExplanation, DefinitionInputs } from './apply/evolution/explain.ts';
export type { RebuildCost } from './apply/evolution/explain-facts.ts';
export { alterWithForecast } from './apply/evolution/alter-targets.ts';
export type { AlterWithForecast, TargetForecast } from './apply/evolution/alter-targets.ts';
export type { AlterClassification, AlterReasonCode, ClassifiedChange, StateProof } from './projection/evolution/classify.ts';
export type { AlterChange, StatePart } from './projection/evolution/changes.ts';
export type { Proof } from './projection/evolution/kinds.ts';
export { health } from './apply/check/health.ts';
export type { FailureHealth, FedLag, HealthFedBy, HealthOptions, HealthReport, ProjectionHealth } from './apply/check/health.ts';
export type { FedBy } from './apply/target/fed-by.ts';
export { dropProjection } from './apply/projections/drop.ts';
export type { DropResult } from './apply/projections/drop.ts';
export { parseDefinition, loadDefinitions, projectionDefinitionSchema } from './projection/definition.ts';
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
export type { ExportOptions, ExportResult } from './export/export.ts';
export { importFile, importStream } from './export/import.ts';
export type { ImportOptions, ImportReport, ItemStream } from './export/import.ts';

export { loadPipeline, checkPipelineSources, pipelineHealth, planPipeline, convergeOnce, declaredInputs } from './pipeline/index.ts';
export type {
  Pipeline,
  PipelineHealth,
  PipelineHealthOptions,
  PipelinePlan,
  PlannedSource,
  PlannedTarget,
  PlannedProjection,
  PlanAction,
  ConvergeReport,
  ConvergeOptions,
  ConvergedSource,
  ConvergedTarget,
} from './pipeline/index.ts';
