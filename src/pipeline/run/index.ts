// The face of src/pipeline/run/: what other folders and the tests import of it (docs/architecture.md, "Faces").
// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.

export { RunLog } from './log.ts';
export type { LogFormat } from './log.ts';
export { configProblems, partProblems, runHolding } from './run-problems.ts';
export { Runner } from './runner.ts';

// Not imported by other folders of src/: for the tests (and bench/, scripts/), which import the folder only here.
export { BUILD_NICE, BuildPriority } from './build-priority.ts';
export { PartFailure, SupervisedPart } from './part.ts';
export type { PartKind, RunShared } from './part.ts';
export { PASS_REPORT_MS, PassReports } from './pass-reports.ts';
