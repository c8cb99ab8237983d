// The face of src/apply/evolution/: what other folders and the tests import of it (docs/architecture.md, "Faces").
// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.

export { alterWithForecast } from './alter-targets.ts';
export type { AlterWithForecast, TargetForecast } from './alter-targets.ts';
export type { RebuildCost } from './explain-facts.ts';
export { compileOrError, definitionsToExplain, explainAlter, explainDefinitions } from './explain.ts';
export type { DefinitionInputs, ExplainOptions, ExplainReport, ProjectionExplanation } from './explain.ts';
export { classifyForSync, classifyFromTarget, storeDefinition } from './sync-classify.ts';
