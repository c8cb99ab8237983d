// The face of src/apply/rebuild/: what other folders and the tests import of it (docs/architecture.md, "Faces").
// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.

export { buildStep, validateShadow } from './build-step.ts';
export type { BuildWatch, Validated, ValidationNeeded } from './build-step.ts';
export { dropRetired, nextRetired } from './retired-tables.ts';
export { dropShadow, resumeOrRollbackShadowBuild, startShadowBuild, writeBuild } from './shadow-build.ts';
export type { BuildState } from './shadow-build.ts';
export { reportedSourceRows } from './snapshot-parts.ts';

// Not imported by other folders of src/: for the tests (and bench/, scripts/), which import the folder only here.
export { BUILD_CHUNK } from './shadow-build.ts';
