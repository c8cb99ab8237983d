// The face of src/apply/projections/: what other folders and the tests import of it (docs/architecture.md, "Faces").
// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.

export {
  SnapshotInstall,
  applyRows,
  checkTablesFree,
  commitBatch,
  ownedBy,
  positionBatch,
  recordSuspension,
  replacedTables,
  storedSuspension,
  suspension,
  suspensionGate,
  takenTable,
  targetFile,
} from './applier.ts';
export type { ApplyTarget, BatchEnd, RowsApplied, Suspension } from './applier.ts';
export { BROKEN_DEFINITION_REASONS, brokenReason, compileStoredToday, isBroken } from './broken-definition.ts';
export type { BrokenDefinition } from './broken-definition.ts';
export { columnsRead } from './columns-read.ts';
export { captureFacts, cursorBreak, decidedSuspension, excludeOf, lacksImages, unbuildable } from './cursor-break.ts';
export type { BuildableFacts, CaptureFacts, DecidedSuspension } from './cursor-break.ts';
export { dropMirrorAll, dropProjection } from './drop.ts';
export type { DropResult } from './drop.ts';
export { nextSyncCapture } from './next-sync-capture.ts';
export type { NothingToMirrorSay } from './nothing-to-mirror.ts';
export {
  MIRROR_ALL,
  PROJECTION_SET_TABLE,
  isDefaultMirror,
  mirrorAllSource,
  readProjectionSet,
  storeProjectionSet,
  streamMirrorAll,
  streamMirrors,
} from './projection-set.ts';
export type { MirrorAll, SetChange, StreamSet, Unmirrored } from './projection-set.ts';
export { SOURCE_AFFINITY, sourceAffinityDetail, sourceAffinityGate, sourceMisfits } from './source-affinity.ts';
export type { SourceAffinityDetail } from './source-affinity.ts';
export { acknowledgesLost, holdsOnlyOthers, noProjectionsOfSource, setOfSource } from './source-projections.ts';
export type { StepOutcome } from './step-outcome.ts';
export {
  admitted,
  compileMirrorAll,
  mirrorAllOf,
  resolveProjections,
  resolveReinit,
  sameDefinitionData,
  storedAsGiven,
  storedDefinitionsMoved,
  uncapturedTable,
} from './sync-definitions.ts';
export type { DefinitionInput, Refusal, Resolution } from './sync-definitions.ts';
export { unbuiltMirrorAction, unbuiltMirrors } from './unbuilt-mirrors.ts';

// Not imported by other folders of src/: for the tests (and bench/, scripts/), which import the folder only here.
export { skipUnread } from './applier.ts';
