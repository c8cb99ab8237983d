// The face of src/cli/: what other folders and the tests import of it (docs/architecture.md, "Faces").
// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.

// Not imported by other folders of src/: for the tests (and bench/, scripts/), which import the folder only here.
export { FollowTally } from './follow-summary.ts';
export * as jsonSchemas from './json-schemas.ts';
export { pipelineHealthOutput, planOutput, runStatusOutput } from './json-schemas.ts';
export { buildProgram } from './main.ts';
export { progressFigures } from './progress-figures.ts';
