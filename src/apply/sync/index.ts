// The face of src/apply/sync/: what other folders and the tests import of it (docs/architecture.md, "Faces").
// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.

export { runBatchPath } from './batch-path.ts';
export { lockFollower, targetFollowed } from './follower-lock.ts';
export { failureOf, recordFailed } from './projection-failure.ts';
export type { ProjectionReport, SyncOptions, SyncProgress, SyncReport } from './sync-types.ts';
export { Syncer, sync } from './sync.ts';

// Not imported by other folders of src/: for the tests (and bench/, scripts/), which import the folder only here.
export { followerLockFile } from './follower-lock.ts';
export { decideFromRow, decideStep } from './step-decision.ts';
export type { StepDecision, StepFacts } from './step-decision.ts';
export { step } from './step.ts';
export type { StepContext, StepOutcome } from './step.ts';
