/*
 * The pipeline file (sluice.yml): what must exist, declared in one place.
 * schema.ts is its shape, load.ts reads and checks it, check-sources.ts
 * confirms what only the sources can, pipeline.ts is the result.
 */
export { loadPipeline } from './load.ts';
export { checkPipelineSources } from './check-sources.ts';
export { pipelineFileSchema } from './schema.ts';
export type {
  Pipeline,
  PipelineSource,
  PipelineTarget,
  PipelineSubscription,
  ProjectionEntry,
  CapturedTable,
  HealthBounds,
  NatsConnection,
  NatsAuth,
  NatsTls,
} from './pipeline.ts';
export type {
  PipelineHealth,
  RunStatus,
  RunPart,
  TargetHealth,
  SourceHealth,
  DeclaredProjectionHealth,
  CapturedTableHealth,
  AcknowledgementHealth,
} from './status.ts';
export { declaredInputs } from './declared.ts';
export { pipelineHealth } from './pipeline-health.ts';
export type { PipelineHealthOptions } from './pipeline-health.ts';
export { planPipeline } from './plan.ts';
export type { PipelinePlan, PlannedSource, PlannedTarget, PlannedProjection, PlanAction } from './plan.ts';
export { convergeOnce } from './converge.ts';
export type { ConvergeReport, ConvergeOptions, ConvergedSource, ConvergedTarget } from './converge.ts';
export { readQuietly, readPipelineQuietly } from './read-quietly.ts';
