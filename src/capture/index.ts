// The face of src/capture/: what other folders and the tests import of it (docs/architecture.md, "Faces").
// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.

export { AlterRefusedError } from './alter-rules.ts';
export { anchorDigest, anchorRowSql } from './anchor-digest.ts';
export { verifyCapture } from './arming.ts';
export type { CaptureVerification, TableArming, UnarmedReason } from './arming.ts';
export { bump } from './bump.ts';
export { hasCapture, highWaterMark, journalHasMask, readOwnDdl, readState, readTables, stateFromRow } from './catalog.ts';
export type { CaptureState, CapturedTable } from './catalog.ts';
export { readConsumers, syncConsumerName, targetKey, upgradeConsumers } from './consumers.ts';
export type { ConsumerRow, TargetState } from './consumers.ts';
export { damagedCapture, damagedCaptureError } from './damaged.ts';
export { readDdlLog } from './ddl-log.ts';
export type { DdlRecord, TableChange } from './ddl-log.ts';
export { disable } from './disable.ts';
export type { DisableResult, DisabledTable } from './disable.ts';
export { enableCommand, enableHint, rearmFix } from './enable-hint.ts';
export { enable } from './enable.ts';
export type { EnableOptions, EnableResult, RearmedTable } from './enable.ts';
export { excludedColumns } from './excluded.ts';
export { capturable, checkEnable, checkNamespace } from './gates.ts';
export { anyChangedSql, decodeMask, encodeMask, maskFor } from './mask.ts';
export type { ColumnMask } from './mask.ts';
export { openSource } from './open-source.ts';
export { ownObjects, ownObjectsChanged, ownTablesWritten } from './own-objects.ts';
export { prune } from './prune.ts';
export type { PruneResult } from './prune.ts';
export { checkRearm } from './rearm.ts';
export type { RearmCheck, RearmReport } from './rearm.ts';
export { nextSyncArming, unarmedDetail, unarmedExclusion } from './rearmable.ts';
export {
  CAPTURE_MODES,
  CAPTURE_RELATIONS,
  CONSUMERS_TABLE,
  DEFAULT_RETENTION,
  FORMAT_VERSION,
  JOURNAL_TABLE,
  MASK_COLUMN,
  MIN_RETENTION,
  OP_DELETE,
  OP_INSERT,
  OP_UPDATE,
  STATE_TABLE,
  TABLES_TABLE,
  imageColumns,
  journalColumn,
  journalRange,
  journalSelectList,
  julianToMs,
  lastSeqSql,
} from './schema.ts';
export type { CaptureMode } from './schema.ts';
export { alter } from './source-alter.ts';
export type { AlterOptions, AlterResult, AlteredTable } from './source-alter.ts';
export { status } from './status.ts';
export type { CaptureStatus, ConsumerStatus, TableStatus } from './status.ts';
export { strip } from './strip.ts';
export { DROPPED_TABLE, PROJECTIONS_TABLE, TARGET_INFO_TABLE, refuseTarget, targetTables } from './target-guard.ts';
export { unreadableCapture } from './unreadable.ts';

// Not imported by other folders of src/: for the tests (and bench/, scripts/), which import the folder only here.
export { checkForeignKeyRules } from './fk-rules.ts';
export { anyChanged, maskBytes } from './mask.ts';
export { pruneJournal } from './prune.ts';
export { rearmCapture } from './rearm.ts';
export { CONSUMERS_TABLE_SQL, DDL_TABLE_SQL, LEGACY_CONSUMERS_TABLE_SQL, metadataDdl, triggerNames } from './schema.ts';
