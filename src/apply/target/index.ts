// The face of src/apply/target/: what other folders and the tests import of it (docs/architecture.md, "Faces").
// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.

export { allowProjectionWrites, refuseProjectionWrites } from './allow-writes.ts';
export { TARGET_SCHEMA, attachTarget } from './attach.ts';
export { buildTables, readBuild, shadowBuildOf } from './build-of.ts';
export type { BuildState } from './build-state.ts';
export { checkConsumers, lostExplanation, lostRepair } from './consumers.ts';
export type { LostProjection } from './consumers.ts';
export { damagedFile, damagedTarget, fails } from './damaged.ts';
export { clearDrops, recordDrop } from './dropped.ts';
export { recordFedBy, recordSubscribed, recordSynced, splitServers, urlLogin, withoutCredentials } from './fed-by.ts';
export type { FedBy } from './fed-by.ts';
export {
  guardProjectionTables,
  projectionOwners,
  projectionWrites,
  triggerWriteFix,
  triggerWriteText,
  userTriggerWriteOf,
  userTriggerWrites,
} from './projection-writes.ts';
export type { ProjectionWrite, TriggerWrite } from './projection-writes.ts';
export {
  GUARD_PREFIX,
  PROTECTED_TABLE,
  clearUnguarded,
  guardFaults,
  guardTable,
  isProtected,
  markUnguarded,
  unguardedMarks,
} from './protect-guards.ts';
export type { GuardFault } from './protect-guards.ts';
export { DEFAULT_BUSY_TIMEOUT_MS, busyRoleOf, markBusy, retryBusy } from './retry.ts';
export { openApplySession } from './session.ts';
export type { ApplySession } from './session.ts';
export { lockTarget } from './target-lock.ts';
export {
  PROJECTIONS_TABLE,
  SELF_CLEARING_SUSPENSIONS,
  TARGET_INFO_TABLE,
  clearFailure,
  dropEmptyTargetMeta,
  ensureTargetMeta,
  hasTargetMeta,
  insertProjection,
  newProjectionRecord,
  ownedTables,
  readLeftCursors,
  readProjection,
  readProjections,
  recordFailure,
  recordLeftCursor,
  setState,
  storeCursor,
} from './target-meta.ts';
export type { ProjectionRecord, ProjectionState } from './target-meta.ts';
export { restoreIndexes, userIndexes } from './user-indexes.ts';
export type { DroppedIndex, UserIndex } from './user-indexes.ts';
export { brokenTriggerProblem, restoreTriggers, userTriggers } from './user-triggers.ts';
export type { DroppedTrigger } from './user-triggers.ts';
