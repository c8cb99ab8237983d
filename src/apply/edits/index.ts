// The face of src/apply/edits/: what other folders and the tests import of it (docs/architecture.md, "Faces").
// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.

export { BuildVouch } from './build-vouch.ts';
export { ensureGuards, protect, unguardedTables } from './protect.ts';
export type { ProtectReport } from './protect.ts';
export { checkEdited, checkPendingEdits, watchedProjections } from './target-edits.ts';
export { TargetWatch } from './target-watch.ts';
