// The face of src/apply/check/: what other folders and the tests import of it (docs/architecture.md, "Faces").
// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.

export { targetTableProblems } from './health-target.ts';
export { notHeldHealth } from './health-types.ts';
export type { FailureHealth, HealthFedBy, HealthReport, ProjectionHealth } from './health-types.ts';
export { health } from './health.ts';
export type { FedLag, HealthOptions } from './health.ts';
export { suspensionRepair } from './suspension-repair.ts';
export { missingTable, tableShapeProblem } from './target-shape.ts';
export { ownCheckOf } from './verify-record.ts';
export type { ProjectionVerification, VerifyDiff, VerifyReport } from './verify-types.ts';
export { compareAtCursor, matchesSourceAt, shadowMatchesSource, verify } from './verify.ts';
export type { VerifyOptions, VerifyProgress } from './verify.ts';
