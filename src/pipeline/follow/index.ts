// The face of src/pipeline/follow/: what other folders and the tests import of it (docs/architecture.md, "Faces").
// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.

export { DefinitionFiles, loadAll, loadInputs, stamp } from './definition-files.ts';
export { followSyncer } from './follow.ts';
export type { FollowedDefinitions } from './follow.ts';
export { followPublisher } from './publish-loop.ts';
export { waitForChange } from './wait.ts';
export type { WaitOptions } from './wait.ts';

// Not imported by other folders of src/: for the tests (and bench/, scripts/), which import the folder only here.
export { FailedPassRetry } from './failed-pass-retry.ts';
