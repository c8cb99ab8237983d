// What the CLI needs from the library beyond the main entry (src/index.ts):
// the wording it prints (the enable command, the repair, shell quoting, the
// alter rules, a reason's retired names), which projection set and tables
// a command names, and export --follow's resume point. A user of the library
// gets none of it: package.json does not export this file. Only src/cli/
// imports it, as it does the main entry; a name a user needs goes into
// src/index.ts instead (docs/architecture.md, "Entries").
export { aliasFields } from './reasons.ts';
export { checkHeldFile, foldIdent, readQuietly, requireOutputPath, writeAccessProblem } from './sqlite/index.ts';
export {
  CAPTURE_RELATIONS,
  damagedCaptureError,
  enableCommand,
  enableHint,
  rearmFix,
  ownObjects,
  ownObjectsChanged,
  ownTablesWritten,
  refuseTarget,
} from './capture/index.ts';
export { alterRules } from './feed/index.ts';
export { eventToLine, readSourceView } from './feed/index.ts';
export { MIRROR_ALL } from './apply/projections/index.ts';
export { suspensionRepair } from './apply/check/index.ts';
export {
  allowProjectionWrites,
  GUARD_PREFIX,
  isProtected,
  projectionOwners,
  projectionWrites,
  refuseProjectionWrites,
  triggerWriteFix,
  triggerWriteText,
  userTriggerWrites,
} from './apply/target/index.ts';
export type { ProjectionWrite, TriggerWrite } from './apply/target/index.ts';
export { readProjections } from './apply/target/index.ts';
export { repairAction, shellWord } from './sqlite/index.ts';
export { errorMessage, isSqliteBusy } from './errors.ts';
export { busyRoleOf } from './apply/target/index.ts';
export { splitServers, urlLogin, withoutCredentials } from './apply/target/index.ts';
export {
  checkResumedTables,
  cursorFileFor,
  positionOf,
  readResumePoint,
  replaceFile,
  saveResumePoint,
  saveSnapshotStart,
  truncateToResumePoint,
  refuseWithoutCursor,
  lockExport,
  refuseFolderWithoutCursor,
  checkSegmentFolderResume,
} from './export/index.ts';
export { withWriteTransaction } from './sqlite/index.ts';
export { writeInitFile } from './pipeline/index.ts';
export type { InitFile } from './pipeline/index.ts';
export { readPipelineQuietly } from './pipeline/index.ts';
export { followSyncer, type FollowedDefinitions } from './pipeline/follow/index.ts';
export { waitForChange, type WaitOptions } from './pipeline/follow/index.ts';
export { DefinitionFiles, loadAll, loadInputs } from './pipeline/follow/index.ts';
export {
  METRIC_NAMES,
  SluiceMetrics,
  promClient,
  targetMetrics,
  type LagFigure,
  type LagSource,
  type MetricsRecord,
  type Scrapable,
} from './pipeline/index.ts';
export { Runner } from './pipeline/run/index.ts';
export { configProblems, partProblems, runHolding } from './pipeline/run/index.ts';
export { RunLog, type LogFormat } from './pipeline/run/index.ts';
export { followPublisher } from './pipeline/follow/index.ts';
export { listenOn } from './pipeline/index.ts';
