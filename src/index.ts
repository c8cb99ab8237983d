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

export { openDatabase } from './sqlite/index.ts';
export type { Db, OpenOptions } from './sqlite/index.ts';
export type { ProcessLock } from './sqlite/index.ts';
export { runQuery } from './sqlite/index.ts';
export type { QueryResult } from './sqlite/index.ts';
export { RawText, toJsonValue, fromJsonValue, jsonValueSchema } from './sqlite/index.ts';
export type { SqlValue, JsonValue } from './sqlite/index.ts';

export { openSource } from './capture/index.ts';
export { enable } from './capture/index.ts';
export type { EnableOptions, EnableResult, RearmedTable } from './capture/index.ts';
export { disable } from './capture/index.ts';
export type { DisableResult, DisabledTable } from './capture/index.ts';
export { bump } from './capture/index.ts';
export { alter } from './capture/index.ts';
export type { AlterOptions, AlterResult, AlteredTable } from './capture/index.ts';
export type { TableChange } from './capture/index.ts';
export { forecastAlter } from './feed/index.ts';
export type { ConsumerForecast, TableForecast } from './feed/index.ts';
export { strip } from './capture/index.ts';
export { status } from './capture/index.ts';
export type { CaptureStatus, TableStatus, ConsumerStatus } from './capture/index.ts';
export { verifyCapture } from './capture/index.ts';
export type { CaptureVerification, TableArming, UnarmedReason } from './capture/index.ts';
export { prune } from './capture/index.ts';
export type { PruneResult } from './capture/index.ts';
export { DEFAULT_RETENTION, MIN_RETENTION, CAPTURE_MODES } from './capture/index.ts';
export type { CaptureMode } from './capture/index.ts';
export type { CapturedTable, CaptureState } from './capture/index.ts';
export type { ConsumerRow, TargetState } from './capture/index.ts';

export { decodeCursor } from './feed/index.ts';
export type { Cursor, FileIdentity } from './feed/index.ts';
export { validateCursor } from './feed/index.ts';
export type { CursorValidation, RebuildReason } from './feed/index.ts';
export { snapshot } from './feed/index.ts';
export type { SnapshotResult, SnapshotHandlers } from './feed/index.ts';
export { readBatch, journalStartCursor } from './feed/index.ts';
export type { Batch, BatchOptions } from './feed/index.ts';
export type { ChangeEvent, InsertEvent, UpdateEvent, DeleteEvent, Row } from './feed/index.ts';
export { changedSince } from './feed/index.ts';
export type { ChangedSince } from './feed/index.ts';
export { updatesSince, updatesPage } from './feed/index.ts';
export type { RowChange, UpdatesSinceOptions, UpdatesPage } from './feed/index.ts';
export { acknowledge, forget } from './feed/index.ts';
export type { AcknowledgedFor } from './feed/index.ts';
export { eventLineSchema } from './feed/index.ts';
export type { EventLine } from './feed/index.ts';

export { Syncer, sync } from './apply/sync/index.ts';
export type { SyncOptions, SyncReport, ProjectionReport, SyncProgress } from './apply/sync/index.ts';
export type { Unmirrored } from './apply/projections/index.ts';
export type { DefinitionInput } from './apply/projections/index.ts';
export type { LostProjection } from './apply/target/index.ts';
export { lockFollower } from './apply/sync/index.ts';
export { verify } from './apply/check/index.ts';
export type { VerifyOptions, VerifyProgress } from './apply/check/index.ts';
export type { VerifyReport, ProjectionVerification, VerifyDiff } from './apply/check/index.ts';
export { protect } from './apply/edits/index.ts';
export type { ProtectReport } from './apply/edits/index.ts';
export { explainAlter } from './apply/evolution/index.ts';
export type { ExplainOptions, ExplainReport, ProjectionExplanation, DefinitionInputs } from './apply/evolution/index.ts';
export type { RebuildCost } from './apply/evolution/index.ts';
export { alterWithForecast } from './apply/evolution/index.ts';
export type { AlterWithForecast, TargetForecast } from './apply/evolution/index.ts';
export type { AlterClassification, AlterReasonCode, ClassifiedChange, StateProof } from './projection/index.ts';
export type { AlterChange, StatePart } from './projection/index.ts';
export type { Proof } from './projection/index.ts';
export { health } from './apply/check/index.ts';
export type { FailureHealth, FedLag, HealthFedBy, HealthOptions, HealthReport, ProjectionHealth } from './apply/check/index.ts';
export type { FedBy } from './apply/target/index.ts';
export { dropProjection } from './apply/projections/index.ts';
export type { DropResult } from './apply/projections/index.ts';
export { parseDefinition, loadDefinitions, projectionDefinitionSchema } from './projection/index.ts';
export type {
  ProjectionDefinition,
  ProjectionDefinitionInput,
  MirrorDefinition,
  MapDefinition,
  Fts5Definition,
  CustomDefinition,
  CustomHandler,
  CustomContext,
} from './projection/index.ts';

export { exportOnce, exportSegment, LineSink } from './export/index.ts';
export type { ExportOptions, ExportResult } from './export/index.ts';
export { importFile, importStream } from './export/index.ts';
export type { ImportOptions, ImportReport, ItemStream } from './export/index.ts';

export {
  loadPipeline,
  checkPipelineSources,
  pipelineHealth,
  planPipeline,
  convergeOnce,
  declaredInputs,
  withPlannedChanges,
} from './pipeline/index.ts';
export type {
  Pipeline,
  PipelineHealth,
  PipelineHealthOptions,
  RunningRun,
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
