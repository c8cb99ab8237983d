/*
 * The pipeline file (sluice.yml): what must exist, declared in one place.
 * schema.ts is its shape, load.ts reads and checks it, check-sources.ts
 * confirms what only the sources can, pipeline.ts is the result.
 */

export { checkPipelineSources } from './check-sources.ts';
export { convergeOnce } from './converge.ts';
export type { ConvergeOptions, ConvergeReport, ConvergedSource, ConvergedTarget } from './converge.ts';
export { checkDeclaredExclusions, declaredInputs, handlerModules, makeTargetFolder, targetFolderProblem } from './declared.ts';
export { enableDeclared } from './enable-declared.ts';
export { withPlannedChanges } from './health-planned.ts';
export { writeInitFile } from './init-file.ts';
export type { InitFile } from './init-file.ts';
export { listenOn, probeListen } from './listen.ts';
export { loadPipeline } from './load.ts';
export { METRIC_NAMES, SluiceMetrics, promClient, targetMetrics } from './metrics.ts';
export type { LagFigure, LagSource, MetricsRecord, Scrapable } from './metrics.ts';
export { namedFiles } from './named-files.ts';
export { pipelineHealth } from './pipeline-health.ts';
export type { PipelineHealthOptions } from './pipeline-health.ts';
export type { Pipeline, PipelineSource, PipelineSubscription, PipelineTarget } from './pipeline.ts';
export { declaredNothingToMirror } from './plan-mirror-all.ts';
export { planPipeline } from './plan.ts';
export type { PipelinePlan, PlanAction, PlannedProjection, PlannedSource, PlannedTarget } from './plan.ts';
export { dropUndeclared, followedByAnother, forgetUndeclared } from './prune.ts';
export { readPipelineQuietly } from './read-quietly.ts';
export { STATUS_PAGE_CSP, statusPageHtml } from './status-page.ts';
export type { PipelineHealth, RunPart, RunStatus, RunningRun, TargetHealth } from './status.ts';

// Not imported by other folders of src/: for the tests (and bench/, scripts/), which import the folder only here.
export { sameColumns, toEnable, undeclaredCapture } from './declared.ts';
export { heldProjections } from './held.ts';
export { written } from './init-file.ts';
export type { SourceHealth } from './status.ts';
