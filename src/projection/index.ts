// The face of src/projection/: what other folders and the tests import of it (docs/architecture.md, "Faces").
// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.

export { compileProjection, madeTables, madeTablesAt, ownedTables, ownedTablesAt, stagedCopyOf, statedFingerprint } from './compile.ts';
export { columnDecl, losesColumn, sourceShape } from './compiled.ts';
export type { CompiledProjection, SourceShape } from './compiled.ts';
export { definitionFingerprint } from './definition-fingerprint.ts';
export {
  defaultMirror,
  lacksHandler,
  loadCustomModule,
  loadDefinitions,
  moduleImports,
  parseDefinition,
  parseStoredDefinition,
  projectionDefinitionSchema,
  withStoredHandler,
} from './definition.ts';
export type {
  CustomDefinition,
  Fts5Definition,
  LoadHandlerOptions,
  MapDefinition,
  MirrorDefinition,
  ProjectionDefinition,
  ProjectionDefinitionInput,
} from './definition.ts';
export type { AlterChange, StatePart } from './evolution/changes.ts';
export { classifyChange, compileStored, readsColumn } from './evolution/classify.ts';
export type { AlterClassification, AlterDecision, AlterReasonCode, ClassifiedChange, UncompiledProjection } from './evolution/classify.ts';
export type { AlterFacts, CursorFact } from './evolution/facts.ts';
export type { Proof } from './evolution/kinds.ts';
export type { StateProof } from './evolution/oracle.ts';
export { capturedShape, checkCollisions, compileAgainstSource, probeExpressions } from './expression-probe.ts';
export { foreignUniqueIndexOf, ftsUniqueMessage } from './foreign-unique.ts';
export type { KindName, SnapshotBuild, SnapshotRows } from './kind.ts';
export { isHandlerFailure } from './kinds/custom/handler.ts';
export type { CustomContext, CustomHandler } from './kinds/custom/schema.ts';
export { useProjectionOwners } from './kinds/custom/source-guard.ts';
export { KINDS, KIND_NAMES, isKindName, kindNamed, kindOf } from './kinds/registry.ts';
export { dropTemps } from './kinds/relational/apply.ts';
export { ExpressionRaised, hasTypedComputedColumn } from './kinds/relational/images.ts';
export type { RaisingImage } from './kinds/relational/images.ts';
export { defaultProjectionName, isProjectionName } from './name.ts';

// Not imported by other folders of src/: for the tests (and bench/, scripts/), which import the folder only here.
export { compiledAs } from './compiled.ts';
export type { CompiledMap, CompiledMirror } from './compiled.ts';
export { STATE_PARTS } from './evolution/changes.ts';
export { DEFAULT_ORACLE } from './evolution/classify.ts';
export type { StoredProjection } from './evolution/classify.ts';
export type { AlterStateOracle } from './evolution/oracle.ts';
export { handlerTables } from './kinds/custom/tables.ts';
export { applyFtsEvents } from './kinds/fts5/events.ts';
export { applyFtsNet } from './kinds/fts5/net.ts';
export { applyRelational } from './kinds/relational/apply.ts';
export type { RelationalPath } from './kinds/relational/apply.ts';
