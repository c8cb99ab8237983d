// What the CLI needs from the library beyond the main entry (src/index.ts):
// the wording it prints (the enable command, the repair, shell quoting, the
// alter rules, a reason's retired names), which projection set and tables
// a command names, and export --follow's resume point. A user of the library
// gets none of it: package.json does not export this file. Only src/cli/
// imports it, as it does the main entry; a name a user needs goes into
// src/index.ts instead (docs/architecture.md, "Entries").
export { aliasFields } from './reasons.ts';
export { checkHeldFile } from './sqlite/file-identity.ts';
export { enableCommand, enableHint } from './capture/enable-hint.ts';
export { alterRules } from './feed/alter-forecast.ts';
export { eventToLine } from './feed/jsonl.ts';
export { MIRROR_ALL } from './apply/projections/projection-set.ts';
export { projectionWrites } from './apply/target/projection-writes.ts';
export { readProjections } from './apply/target/target-meta.ts';
export { repairAction, shellWord } from './sqlite/shell-word.ts';
export { errorMessage } from './errors.ts';
export { urlLogin, withoutCredentials } from './apply/target/fed-by.ts';
export {
  cursorFileFor,
  positionOf,
  readResumePoint,
  saveResumePoint,
  saveSnapshotStart,
  truncateToResumePoint,
} from './export/resume-point.ts';
export { withWriteTransaction } from './sqlite/transaction.ts';
export { writeInitFile } from './pipeline/init-file.ts';
export type { InitFile } from './pipeline/init-file.ts';
export { readPipelineQuietly } from './pipeline/read-quietly.ts';
export { followSyncer, type FollowedDefinitions } from './pipeline/follow/follow.ts';
export { waitForChange, type WaitOptions } from './pipeline/follow/wait.ts';
export { DefinitionFiles, loadAll, loadInputs } from './pipeline/follow/definition-files.ts';
export {
  METRIC_NAMES,
  SluiceMetrics,
  promClient,
  targetMetrics,
  type LagFigure,
  type LagSource,
  type MetricsRecord,
  type Scrapable,
} from './pipeline/metrics.ts';
export { Runner } from './pipeline/run/runner.ts';
export { RunLog, type LogFormat } from './pipeline/run/log.ts';
export { followPublisher } from './pipeline/follow/publish-loop.ts';
export { listenOn } from './pipeline/listen.ts';
