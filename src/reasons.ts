/*
 * Every stable code sluice reports, in one table: error codes (SluiceError
 * `code`), why a cursor cannot continue, why sync rebuilt or suspended a
 * projection, why a captured table is not armed, and why verify did not say
 * ok. Like errors.ts this file is below every layer and imports none.
 * docs/reasons.md is generated from it (npx tsx scripts/reasons-doc.ts), and
 * test/repo/reason-catalog.test.ts checks the file and that every code src/ raises or
 * returns is here.
 */

/**
 * What a code reports. One code can play several parts: TABLE_UNARMED makes
 * a reader rebuild and suspends a projection in sync.
 */
export const REASON_KINDS = {
  rebuild: 'a cursor cannot be continued (validateCursor): a reader starts again from a snapshot',
  rebuilt: 'sync rebuilt a projection from a snapshot by itself (SyncReport `rebuilt`)',
  suspend: 'sync suspended a projection in its own row; the others go on',
  unarmed: 'a captured table is not armed (status, enable, and the re-arming at sync)',
  verify: 'verify did not compare a projection, or did not call it ok',
  health: 'health says a projection needs action',
  alter:
    'explain classified a change to a projection (its definition, its source table, its target): an AlterReasonCode, with Compatible, Rebuildable or Rejected; sync classifies a changed definition the same way',
  error: 'raised as a SluiceError with this `code`',
  warning: 'a command did what was asked, and says what it means (stderr, and `warnings` in --json)',
} as const;

export type ReasonKind = keyof typeof REASON_KINDS;

export interface ReasonInfo {
  readonly kinds: readonly ReasonKind[];
  /**
   * No repair command is needed: sync rebuilds by itself, or (a suspension)
   * looks again each run, so removing the cause is enough.
   */
  readonly clears: boolean;
  /** One line: what happened. */
  readonly explain: string;
  /**
   * For a suspension, what repairs it, with the command: placeholders
   * {source}, {target}, {projection} and {table} (the projection's source
   * table), filled in by repairFor. Null where the error's message names
   * the fix itself.
   */
  readonly repair: string | null;
  /**
   * Codes this one replaces: the names older releases reported for the same
   * thing. A retired code is never raised; for one release after the rename
   * every `--json` object that carries this code (an error's `code`, a
   * `reason`) carries them beside it as `aliases`, and a retired code read
   * back from a file an older release wrote (a stored reason) reads as this
   * one (currentCode). Then the entry drops it.
   */
  readonly replaces?: readonly string[];
}

/**
 * The commands messages name beside the repairs, with a repair's
 * placeholders: fillRepair fills them in, with values quoted for the shell
 * first (sqlite/shell-word.ts shellCommand). A word in capitals is the
 * user's to choose.
 */
export const COMMANDS = {
  /** Rebuilds a projection from a snapshot. */
  reinit: 'sluice reinit {source} {target} {projection}',
  sync: 'sluice sync {source} {target}',
  /** A sync of the source whose target is not named. */
  syncSource: 'sluice sync {source}',
  enable: 'sluice enable {source} {table}',
  drop: 'sluice drop {target} {projection}',
  health: 'sluice health {target}',
  /** health reading a subscribed target's lag from its stream. */
  healthFromStream: 'sluice health {target} --nats URL',
  /** An import of a file into the target. */
  importInto: 'sluice import {target} FILE',
  verify: 'sluice verify {source} {target}',
  explain: 'sluice explain {source} {target}',
  protect: 'sluice protect {target}',
} as const;

/**
 * The repair of a suspension whose rows may be wrong, and of one with no
 * repair of its own: rebuild the projection. (Not verify for the cause: it
 * does not compare a suspended projection.)
 */
export const DEFAULT_REPAIR = `find the cause (sluice health {target} --json shows what was found), then rebuild it: ${COMMANDS.reinit}`;
/** The repair of a suspension caused by the source's capture, not the target's rows. */
const FIX_SOURCE =
  'fix the source: capture {table} in images mode (sluice enable {source} {table} --mode images), then run sluice sync again';
/** The repair of a stored definition that no longer fits the source. */
const REFIT =
  '{projection} names what the source no longer has (detail.message says what); put it back in the source and run sluice sync again, or write a definition of {projection} that fits the source to a file and pass it with --projection to sluice sync {source} {target}, or remove the projection and its tables: sluice drop {target} {projection}';

export const REASONS = {
  // Cursors: why one cannot be continued, and what sync does then.
  CAPTURE_ABSENT: {
    kinds: ['rebuild', 'error'],
    clears: false,
    explain: 'The database has no sluice capture (never enabled, or disabled).',
    repair: null,
  },
  CAPTURE_DAMAGED: {
    kinds: ['error'],
    clears: false,
    explain:
      "A table of the source's capture (_sluice_journal, _sluice_tables, ...) was dropped outside sluice; sluice disable SRC removes what is left, and enable captures again. Only _sluice_pending (without which the application's writes fail) is made again by an enable of a table the source captures, with no rebuild.",
    repair: null,
  },
  CAPTURE_FORMAT_UNKNOWN: {
    kinds: ['rebuild', 'error'],
    clears: false,
    explain: 'The capture was written by a newer sluice, in a format this one does not read.',
    repair: null,
  },
  CURSOR_VERSION_UNKNOWN: {
    kinds: ['rebuild', 'rebuilt'],
    clears: true,
    explain: 'The cursor was made by another sluice version, in a form this one does not read.',
    repair: null,
  },
  SOURCE_CHANGED: {
    kinds: ['rebuild', 'rebuilt', 'error'],
    clears: true,
    explain: 'The cursor belongs to another source (capture re-created, or another database).',
    repair: null,
  },
  GENERATION_CHANGED: {
    kinds: ['rebuild', 'rebuilt'],
    clears: true,
    explain: 'The source generation was bumped since the cursor: changes in between may be unrecorded.',
    repair: null,
  },
  SEQ_REGRESSED: {
    kinds: ['rebuild', 'rebuilt'],
    clears: true,
    explain: "The cursor is past the source's high-water mark: the file was restored from an older copy.",
    repair: null,
  },
  HISTORY_DIVERGED: {
    kinds: ['rebuild', 'rebuilt'],
    clears: true,
    explain: 'The journal at the cursor holds another history: an older copy was restored and written past the cursor.',
    repair: null,
  },
  FILE_CHANGED: {
    kinds: ['rebuild', 'rebuilt'],
    clears: true,
    explain: 'The cursor was taken on another file (device/inode): the database was replaced or copied.',
    repair: null,
  },
  CURSOR_PRUNED: {
    kinds: ['rebuild', 'rebuilt'],
    clears: true,
    explain:
      'Events after the cursor, or its last event (its anchor, so that the history it continues can no longer be checked against the journal), were pruned from the journal (retention).',
    repair: null,
  },
  TABLE_UNTRACKED: {
    kinds: ['rebuild', 'suspend', 'verify', 'error'],
    clears: true,
    explain: 'The table is not captured on the source (never captured, or its capture was taken off: sluice disable).',
    repair:
      'the source does not capture {table}: capture it again (sluice enable {source} {table} --mode images) and run sluice sync again, or remove the projection and its tables: sluice drop {target} {projection}',
  },
  TABLE_UNARMED: {
    kinds: ['rebuild', 'suspend', 'error'],
    clears: true,
    explain: 'The table is not armed (detail says why): writes since then were not recorded.',
    repair: FIX_SOURCE,
  },
  COUNTER_MODE_TABLE: {
    kinds: ['rebuild', 'error'],
    clears: false,
    explain: 'The table is captured in counter mode, which records that it changed, not which rows.',
    repair: null,
  },
  SCHEMA_CHANGED: {
    kinds: ['rebuild', 'rebuilt', 'unarmed', 'verify'],
    clears: true,
    explain:
      'The schema or capture mode of the table changed since the cursor or the arming, or a column the reader reads is another column since (dropped and added again under its name, or another renamed onto it).',
    repair: null,
  },
  TABLE_REARMED: {
    kinds: ['rebuild', 'rebuilt'],
    clears: true,
    explain: 'A table of the cursor was re-armed since (a trigger restored, a user trigger or column added, a mode change, an upgrade).',
    repair: null,
  },
  SCHEMA_WINDOW: {
    kinds: ['rebuild', 'rebuilt'],
    clears: true,
    explain: 'DDL sluice did not make ran since the cursor; a consumer that cannot prove continuity rebuilds.',
    repair: null,
  },
  DEFINITION_CHANGED: {
    kinds: ['rebuilt', 'verify'],
    clears: true,
    explain: "The projection's definition or its source table changed since it was built.",
    repair: null,
  },
  REINIT: { kinds: ['rebuilt'], clears: true, explain: 'sluice reinit (or sync --reinit) rebuilt the projection as asked.', repair: null },
  CAPTURE_REARMED: {
    kinds: ['rebuilt'],
    clears: true,
    explain: "Opening the source re-armed the projection's table, so cursors made before it rebuild once.",
    repair: null,
  },
  CURSOR_MALFORMED: {
    kinds: ['suspend', 'error'],
    clears: false,
    explain: 'The cursor is not a sluice cursor (garbage or truncated).',
    repair: DEFAULT_REPAIR,
  },

  // Suspensions of one projection.
  EXPRESSION_FAILED: {
    kinds: ['suspend', 'error'],
    clears: false,
    explain:
      "A map's expression or filter raised an error in SQLite on a source value (json() of text that is not JSON, abs() of the smallest integer). In a batch the journal keeps that value, so a plain sync fails on it again however the source changes (the projection is suspended); in a build (an error) the next sync reads the source again.",
    repair:
      'fix the value in {table} that detail names (sluice health {target} --json shows the column, key and seq), or make the expression total (CASE WHEN json_valid(x) THEN json(x) END, say) in a definition file; then rebuild it from the source as it is now: sluice reinit {source} {target} {projection} (with --projection FILE for the new definition)',
  },
  TARGET_DIVERGED: {
    kinds: ['suspend'],
    clears: false,
    explain: "A before-image did not match the target's row: the target was edited, or a write went unrecorded.",
    repair: DEFAULT_REPAIR,
  },
  WRITES_PROJECTION: {
    kinds: ['warning'],
    clears: false,
    explain:
      "sluice query ran a statement that writes a table of a projection in a target: the projection's rows are no longer its source's, and sluice suspends it (TARGET_EDITED) once it sees the edit.",
    repair: null,
  },
  TARGET_EDITED: {
    kinds: ['suspend'],
    clears: false,
    explain:
      "Another program changed the projection's tables in the target (a hand edit): sync --follow saw the write in the target's write-ahead log, or verify found rows that differ from the source; they are no longer the source's.",
    repair:
      "undo the edit (sluice health {target} --json shows what differs) and run sluice verify {source} {target}, which clears it once the rows of a mirror, a map or an fts5 index with content equal the source again; a custom handler's tables and a contentless fts5 index keep nothing sluice can compare, and only a rebuild clears those; any edited projection can be rebuilt: sluice reinit {source} {target} {projection}",
  },
  UNCAPTURED_REPLACE: {
    kinds: ['suspend'],
    clears: false,
    explain: 'A key that should be absent is present: a REPLACE deleted a row without a recorded delete.',
    repair: DEFAULT_REPAIR,
  },
  NEEDS_IMAGES_MODE: {
    kinds: ['suspend'],
    clears: true,
    explain: 'The projection needs row images, but its table is captured in another mode.',
    repair: FIX_SOURCE,
  },
  TARGET_CONSTRAINT: {
    kinds: ['suspend'],
    clears: true,
    explain: 'A UNIQUE index a user added to a target table would be broken by the batch; nothing of it was written.',
    repair:
      'sluice cannot keep a UNIQUE index that was added to a target table (detail.message says which and why); drop it or make it non-unique, then run sluice sync again',
  },
  USER_TRIGGER_WRITES_PROJECTION: {
    kinds: ['suspend', 'health', 'warning'],
    clears: true,
    explain:
      "A user's trigger that a write to the projection's tables fires writes another projection's table (or sluice's own): it would fire inside sluice's own transaction, where protect's guards and the hand-edit watch do not see it, and change that projection behind sluice's back. sync, import and subscribe apply nothing to the projection while it is there, health says so before a sync runs, and sluice query warns when it makes one.",
    repair:
      "drop the trigger detail.message names (its message gives the sluice query {target} command that drops it), or make it write only tables that are no projection's; then run sluice sync again: {projection} takes its events from where it stopped",
  },
  DEFINITION_INVALID: {
    kinds: ['suspend', 'error'],
    clears: true,
    explain: 'The stored definition no longer validates.',
    repair:
      'the stored definition of {projection} no longer validates (detail.message says why); write a corrected one to a file and rebuild it from that, passing the file with --projection to sluice reinit {source} {target} {projection}',
  },
  SOURCE_COLUMN_MISSING: {
    kinds: ['suspend', 'error'],
    clears: true,
    explain: 'The stored definition names a source column that no longer exists.',
    repair: REFIT,
  },
  SOURCE_TABLE_MISSING: {
    kinds: ['suspend', 'error'],
    clears: true,
    explain: 'The stored definition names a source table that no longer exists.',
    repair: REFIT,
  },
  SUSPENDED: { kinds: ['suspend'], clears: false, explain: 'Suspended with no reason recorded.', repair: DEFAULT_REPAIR },

  // Why a captured table is not armed.
  TABLE_MISSING: { kinds: ['unarmed'], clears: false, explain: 'The captured table no longer exists.', repair: null },
  NOT_A_TABLE: {
    kinds: ['unarmed'],
    clears: false,
    explain: 'The captured name is now another kind of object (a view, or a table of another name).',
    repair: null,
  },
  TRIGGER_MISSING: { kinds: ['unarmed'], clears: false, explain: 'A capture trigger is missing.', repair: null },
  TRIGGER_ALTERED: { kinds: ['unarmed'], clears: false, explain: 'A capture trigger differs from what sluice installed.', repair: null },
  TEMP_SHADOW: { kinds: ['unarmed', 'error'], clears: false, explain: 'A TEMP object shadows the table.', repair: null },
  FK_UPDATE_CYCLE: {
    kinds: ['unarmed', 'error'],
    clears: false,
    explain: 'ON UPDATE foreign-key actions form a cycle among captured tables.',
    repair: null,
  },
  FK_DELETE_KEY_UPDATE: {
    kinds: ['unarmed', 'error'],
    clears: false,
    explain: 'A foreign-key action would change a captured key in a way capture cannot order.',
    repair: null,
  },
  PRUNE_TRIGGER_MISSING: { kinds: ['unarmed'], clears: false, explain: 'The journal prune trigger is missing or altered.', repair: null },
  UNIQUE_EXPRESSION_INDEX: {
    kinds: ['unarmed', 'error'],
    clears: false,
    explain: 'A UNIQUE index over an expression: a REPLACE through it deletes rows capture cannot see.',
    repair: null,
  },
  UNIQUE_FROM_DEFAULT: {
    kinds: ['unarmed', 'error'],
    clears: false,
    explain:
      'A UNIQUE index over a generated column computed from a NOT NULL column with a DEFAULT: an INSERT or UPDATE OR REPLACE that writes NULL to that column takes the default after the triggers ran, and deletes a row capture cannot see.',
    repair: null,
  },
  UNIQUE_VOLATILE_DEFAULT: {
    kinds: ['unarmed', 'error'],
    clears: false,
    explain:
      'A NOT NULL column of the key or of a UNIQUE index whose DEFAULT SQLite may compute as another value each time (random(), randomblob(), a function the application registers): an INSERT or UPDATE OR REPLACE that writes NULL to it takes the default after the triggers ran, which compute another value in its place, and deletes a row capture cannot see.',
    repair: null,
  },
  UNIQUE_FROM_ROWID: {
    kinds: ['unarmed', 'error'],
    clears: false,
    explain:
      'A UNIQUE index over a generated column computed from the INTEGER PRIMARY KEY: an INSERT OR REPLACE that leaves the key to SQLite deletes a row capture cannot see.',
    repair: null,
  },
  USER_TRIGGER_NEWER: {
    kinds: ['unarmed'],
    clears: false,
    explain: "A user AFTER trigger newer than sluice's fires first, so sluice would journal stale after-images.",
    repair: null,
  },
  CAPTURE_INTERRUPTED: {
    kinds: ['unarmed'],
    clears: false,
    explain: 'A capture trigger or the table was dropped and made again after arming.',
    repair: null,
  },
  CAPTURE_OUTDATED: {
    kinds: ['unarmed'],
    clears: false,
    explain: 'The triggers were installed by an older sluice (format upgrade).',
    repair: null,
  },
  RESERVED_COLUMN_NAME: {
    kinds: ['unarmed', 'error'],
    clears: false,
    explain: "A column starts with sluice's reserved prefix _sluice_.",
    repair: null,
  },
  MODE_CHANGED: { kinds: ['unarmed'], clears: false, explain: 'enable re-armed a table in another capture mode.', repair: null },
  EXCLUDE_CHANGED: {
    kinds: ['unarmed'],
    clears: false,
    explain:
      "enable re-armed a table with another set of columns left out of capture (--exclude, or a pipeline file's exclude). The table's retained journal rows lost the newly excluded columns in the same transaction (with secure_delete on), and its readers rebuild once (TABLE_REARMED), so existing targets lose a newly excluded column or gain one no longer excluded.",
    repair: null,
  },
  TABLE_DISABLED: {
    kinds: ['unarmed'],
    clears: false,
    explain:
      "sluice disable SRC TABLE took capture off the table: its triggers and catalog row were removed, its journal rows made tombstones (only what a cursor anchored on one compares is kept) and the generation moved (the source's last_reason). Its readers find it untracked (TABLE_UNTRACKED) until it is enabled again, which arms it at a new generation, so they rebuild.",
    repair: null,
  },
  FORMAT_UNKNOWN: {
    kinds: ['unarmed'],
    clears: false,
    explain: "verifyCapture's problem for a capture format this sluice does not read (CAPTURE_FORMAT_UNKNOWN to readers).",
    repair: null,
  },

  // verify's answers.
  BEHIND: {
    kinds: ['verify'],
    clears: false,
    explain: "The journal is pruned past the projection's cursor, so keys changed since cannot be compared.",
    repair: null,
  },
  SYNC_FAILING: { kinds: ['verify'], clears: false, explain: 'The last sync of the projection failed; it is not compared.', repair: null },
  SOURCE_AFFINITY: {
    kinds: ['suspend', 'verify'],
    clears: false,
    explain:
      "A source column holds values its own declared type would store in another class (its declaration changed without its rows written again: PRAGMA writable_schema), so no copy in a target whose column is declared the same can hold them as they are (the TEXT '1' of a column declared INTEGER is stored as the INTEGER 1): sync suspends a rebuild over a column whose declared type changed so (the projection keeps its rows), and verify says so of rows that differ for it.",
    repair:
      'store those values again in the source, each as its column\'s declared type stores it (detail.rewrite is the statement: sluice query {source} "UPDATE {table} SET c = c WHERE ..."; the capture journals each value it changes), or declare the columns as they were; then rebuild: sluice reinit {source} {target} {projection}',
  },
  ROWS_DIFFER: {
    kinds: ['verify'],
    clears: false,
    explain:
      "Rows of the projection differ from the source's at its cursor (missing, extra or with other values): written by something other than sluice, or a write went unrecorded.",
    repair: '{projection} differs from its source (verify names the keys); rebuild it: sluice reinit {source} {target} {projection}',
  },
  UNCAPTURED_WRITE: {
    kinds: ['verify'],
    clears: false,
    explain:
      "Rows of the source table of keys changed after the projection's cursor are not what the journal's last event of each key left (its after image, or no row after a delete): a connection capture did not see wrote them (triggers off: the sqlite3 shell's .dbconfig enable_trigger off, Python's setconfig), so no sync brings those writes to any reader of the table. verify says so of a target behind its source; a caught-up one sees such a write only as rows that differ (ROWS_DIFFER, TARGET_EDITED), which it cannot tell from a hand edit of the target.",
    repair:
      'the journal of {table} misses writes to it: make every reader of the source rebuild from its rows as they are, sluice bump {source} --reason "writes to {table} with triggers off", then sluice sync {source} {target}',
  },
  NOT_VERIFIABLE: {
    kinds: ['verify'],
    clears: false,
    explain: 'A custom projection: verify cannot compare it with the source.',
    repair: null,
  },
  NO_PROJECTIONS_OF_SOURCE: {
    kinds: ['verify', 'error'],
    clears: false,
    explain:
      "The target holds no projection of this source: verify has nothing to compare, and a plain sync or explain of it, into a target whose projections (or \"*\") are all other source files', has nothing to run (refused, nothing written; build some of its projections there with sync --projection FILE or --projection '*').",
    repair: null,
  },

  // health's answers.
  TARGET_TABLE_CHANGED: {
    kinds: ['health'],
    clears: false,
    explain:
      "A table of the projection is missing from the target, or its shape is not the one sluice made: other columns than the definition's, a column declared with a type of another affinity or with another collation, or no PRIMARY KEY or UNIQUE index on the key (or one under another collation; an fts5 key table that lost its key or rowid), or an fts5 index declared otherwise than its definition makes it (a column UNINDEXED or in another order, another tokenize, a detail, prefix or content option, or a plain table in its place). sync, import and subscribe check the same before they apply a batch and suspend such a mirror, map or fts5 index, and verify says so instead of comparing its rows: it would fail on a column, store values converted (the text '3' as the integer 3), take two keys for one, add a second row for a key, write rows the index cannot find, or answer searches unlike the definition's index.",
    repair: DEFAULT_REPAIR,
  },
  MIRROR_NOT_BUILT: {
    kinds: ['health', 'verify'],
    clears: true,
    explain:
      'The target mirrors every captured table ("*"), and this captured table has no mirror yet (enabled after the last sync, or its first build failed): the next sync builds it.',
    repair: 'run sluice sync {source} {target}: it builds the mirror of every captured table that has none',
  },
  MIRROR_REFUSED: {
    kinds: ['health', 'verify'],
    clears: true,
    explain:
      'The target mirrors every captured table ("*"), and this captured table\'s mirror cannot be made as the table is (health names the refusal, KEY_COLLATION_MISMATCH say): sync leaves it out at every run, exiting 0, and says why. For a pipeline file, sluice plan lists its mirror as refused, and plan and health --config say the fixes in the file\'s terms (declare a mirror of each other table instead of "*", or take the table out of "capture" and disable it).',
    repair:
      'change {table} as that refusal says, then run sluice sync {source} {target}, which builds its mirror; or, if no target needs {table}, stop capturing it: sluice disable {source} {table}',
  },
  CONSUMER_NOT_BUILT: {
    kinds: ['health', 'verify'],
    clears: false,
    explain:
      'The source acknowledges a projection for this target (its _sluice_consumers row) that the target does not hold and the sync does not build: the target was deleted and made again (it held projections given with --projection), or the projection was removed without sluice drop. sync, health and verify exit 3 naming it until it is built again or the source forgets it.',
    repair:
      'build {projection} again (sluice sync {source} {target} --projection FILE, FILE being its definition), or, if it is gone for good, forget it on the source: sluice forget {source} {projection}@{target}',
  },
  APPLY_FAILED: {
    kinds: ['health'],
    clears: false,
    explain: "A sync of the projection failed with an error that has no code of its own (sync's error.code, health's failure.code).",
    repair: null,
  },

  // explain's classification of a change to a projection (AlterReasonCode, src/projection/evolution/classify.ts).
  ALTER_UNCHANGED: {
    kinds: ['alter'],
    clears: true,
    explain: 'Compatible: neither the definition nor the source table it compiles against changed, and the cursor continues.',
    repair: null,
  },
  ALTER_RENAMED: {
    kinds: ['alter'],
    clears: true,
    explain: 'The projection is renamed, with the same kind, source table, target table and data: its stored row takes the new name.',
    repair: null,
  },
  ALTER_TARGET_INDEX: {
    kinds: ['alter'],
    clears: true,
    explain: 'A non-UNIQUE index a user added to a table of the projection: it holds no rows of its own and a rebuild makes it again.',
    repair: null,
  },
  ALTER_FILTER_CHANGED: {
    kinds: ['alter'],
    clears: true,
    explain:
      "The map's filter changed: Compatible only when both filters select the same source rows at the cursor (counted), else Rebuildable.",
    repair: null,
  },
  ALTER_COLUMNS_CHANGED: {
    kinds: ['alter'],
    clears: true,
    explain: 'The target columns changed (added, dropped, renamed, reordered, or computed otherwise): the rows are rebuilt.',
    repair: null,
  },
  ALTER_TARGET_CHANGED: {
    kinds: ['alter'],
    clears: true,
    explain: 'The projection writes another target table: it is built there.',
    repair: null,
  },
  ALTER_SOURCE_CHANGED: {
    kinds: ['alter'],
    clears: true,
    explain: 'The projection reads another source table: it is rebuilt from it.',
    repair: null,
  },
  ALTER_KIND_CHANGED: { kinds: ['alter'], clears: true, explain: 'The projection is of another kind: it is rebuilt.', repair: null },
  ALTER_FTS_OPTIONS_CHANGED: {
    kinds: ['alter'],
    clears: true,
    explain: "The fts5 index's content mode or tokenizer changed: its index is rebuilt.",
    repair: null,
  },
  ALTER_HANDLER_CHANGED: {
    kinds: ['alter'],
    clears: true,
    explain: "A custom projection's handler (its version or module) changed: the state it keeps cannot be proved to fit.",
    repair: null,
  },
  ALTER_SOURCE_COLUMN_ADDED: {
    kinds: ['alter'],
    clears: true,
    explain:
      "A column was added to the source table: a mirror must carry it (Rebuildable); a projection that does not read it keeps its cursor when the DDL ran through sluice alter (Compatible), and not otherwise (every cursor binds the table's columns).",
    repair: null,
  },
  ALTER_SOURCE_COLUMN_UNUSED: {
    kinds: ['alter'],
    clears: true,
    explain:
      'A source column the projection does not read was dropped, renamed or retyped: only the cursor is affected, and it continues when the DDL ran through sluice alter (Compatible).',
    repair: null,
  },
  ALTER_SOURCE_KEY_CHANGED: {
    kinds: ['alter'],
    clears: true,
    explain: "The source table's primary key changed: target rows take the new identity in a rebuild.",
    repair: null,
  },
  ALTER_SOURCE_TABLE_CHANGED: {
    kinds: ['alter'],
    clears: true,
    explain: 'The source table was made WITHOUT ROWID or back, or its rowid alias changed: its row identities are rebuilt.',
    repair: null,
  },
  ALTER_CURSOR_INVALID: {
    kinds: ['alter'],
    clears: true,
    explain:
      'The stored cursor does not continue on the source (the change says why): rebuilt, or Rejected while the source must be fixed first or the projection is suspended until a rebuild; sync then suspends it with that reason.',
    repair: FIX_SOURCE,
  },
  ALTER_PROJECTION_ADDED: {
    kinds: ['alter'],
    clears: true,
    explain: 'A projection the target does not hold yet: sync builds it from a snapshot.',
    repair: null,
  },
  ALTER_SOURCE_COLUMN_DROPPED: {
    kinds: ['alter'],
    clears: false,
    explain:
      'A source column the projection reads was dropped (or is another column under its name now): Rejected where the definition names it and no column has that name (a stored one is suspended, SOURCE_COLUMN_MISSING), Rebuildable where it still compiles (a mirror, or a name added again).',
    repair: REFIT,
  },
  ALTER_SOURCE_COLUMN_RENAMED: {
    kinds: ['alter'],
    clears: false,
    explain:
      'A source column the projection reads was renamed by a RENAME COLUMN that sluice alter ran and recorded (a rename it did not record is a dropped column and an added one): Rejected where the definition names it (a stored one is suspended, SOURCE_COLUMN_MISSING), Rebuildable where it still compiles (a mirror).',
    repair: REFIT,
  },
  ALTER_SOURCE_COLUMN_RETYPED: {
    kinds: ['alter'],
    clears: true,
    explain: 'A source column the projection reads has another declared type or collation: Rebuildable (the definition compiles over it).',
    repair: null,
  },
  ALTER_SOURCE_TABLE_MISSING: {
    kinds: ['alter'],
    clears: false,
    explain: 'The source table the definition names does not exist.',
    repair: REFIT,
  },
  ALTER_UNKNOWN_COLUMN: {
    kinds: ['alter'],
    clears: false,
    explain: 'The new definition names a column the source table does not have.',
    repair: 'fix the column names in the definition of {projection} (detail.message says which), then run sluice explain again',
  },
  ALTER_KEY_MISSING: {
    kinds: ['alter'],
    clears: false,
    explain: 'The new definition leaves out a source key column, so target rows would lose their identity.',
    repair: 'include every source key column in {projection} as a plain column, then run sluice explain again',
  },
  ALTER_KEY_NOT_UNIQUE: {
    kinds: ['alter'],
    clears: false,
    explain: "The source key would no longer identify one target row (no primary key, or a key collation unlike the column's).",
    repair: "give the source table a primary key declared with its columns' collations, or use a custom projection",
  },
  ALTER_DEFINITION_INVALID: {
    kinds: ['alter'],
    clears: false,
    explain: 'The new definition does not validate or compile (detail.message says why).',
    repair: 'fix the definition of {projection} (detail.message says what), then run sluice explain again',
  },
  ALTER_TARGET_UNIQUE_INDEX: {
    kinds: ['alter'],
    clears: true,
    explain:
      'A UNIQUE index a user added to a table of the projection: Compatible (it adds no key of the projection); a batch it refuses suspends the projection (TARGET_CONSTRAINT), and a rebuild makes it again or leaves it out and reports it (droppedIndexes).',
    repair: null,
  },
  ALTER_NO_SPACE: {
    kinds: ['alter', 'error'],
    clears: false,
    explain: "The shadow a rebuild needs would not fit in the target's free disk space (detail says bytes needed and free).",
    repair: "free disk space on the target's file system, then run sluice explain (or sluice sync) again",
  },
  ALTER_CUSTOM_NO_SHADOW: {
    kinds: ['alter', 'error'],
    clears: false,
    explain: 'A custom projection needs a rebuild, but its handler declares no tables of its own, so no shadow can be built and swapped.',
    repair:
      'declare the tables its handler owns ("tables" in its definition) so that a rebuild is built beside them, or rebuild it in one transaction once you accept that its target is locked while it runs: sluice reinit {source} {target} {projection}',
  },

  // Capture refusals.
  NO_PRIMARY_KEY: { kinds: ['error'], clears: false, explain: 'The table has no explicit PRIMARY KEY.', repair: null },
  NULL_KEY_ROWS: { kinds: ['error'], clears: false, explain: 'Rows of the table have a NULL primary key.', repair: null },
  NAMESPACE_COLLISION: {
    kinds: ['error'],
    clears: false,
    explain: 'An object not made by sluice uses the reserved prefix _sluice_.',
    repair: null,
  },
  RESERVED_NAME: {
    kinds: ['error'],
    clears: false,
    explain: 'Table names starting with _sluice_ or sqlite_ cannot be captured.',
    repair: null,
  },
  TEMP_TABLE_REFUSED: { kinds: ['error'], clears: false, explain: 'The table exists only in TEMP.', repair: null },
  VIEW_REFUSED: { kinds: ['error'], clears: false, explain: 'A view cannot be captured.', repair: null },
  VIRTUAL_TABLE_REFUSED: { kinds: ['error'], clears: false, explain: 'A virtual table cannot be captured.', repair: null },
  TABLE_NOT_FOUND: { kinds: ['error'], clears: false, explain: 'The named table does not exist (or vanished).', repair: null },
  PIPELINE_INVALID: {
    kinds: ['error'],
    clears: false,
    explain:
      'The pipeline file (sluice.yml) is not valid: YAML, an unknown key, a value of the wrong type, a path or table that does not exist; the message gives FILE:LINE:COL and the fix, and nothing was written.',
    repair: null,
  },
  RUN_LOCKED: {
    kinds: ['error'],
    clears: false,
    explain:
      'Another `sluice run` keeps this pipeline file (it holds the lock FILE-run beside it): one process keeps one pipeline. The message names the process; stop it first (kill PID), or run another pipeline file.',
    repair: null,
  },
  RUN_PART_FAILED: {
    kinds: ['error'],
    clears: false,
    explain:
      "A part of `sluice run` (a target's worker thread, a capture, the HTTP server) ended with an error that carries no code of its own; the message says what happened. run records it in the part (/healthz) and retries it with backoff; the other parts go on.",
    repair: null,
  },
  PIPELINE_ENV_UNSET: {
    kinds: ['error'],
    clears: false,
    explain: 'The pipeline file names an environment variable (${NAME}) that is not set; sluice never reads it as an empty string.',
    repair: null,
  },
  TARGET_NOT_SOURCE: {
    kinds: ['error'],
    clears: false,
    explain:
      'The database given as a source is a sluice target: capture cannot be enabled on it, and sync, verify, explain, status, prune and bump find no capture in it. The message names the command on the file it is synced from.',
    repair: null,
  },
  OUTPUT_EXISTS: { kinds: ['error'], clears: false, explain: 'strip and init never overwrite a file.', repair: null },
  OUTPUT_FOLDER_MISSING: {
    kinds: ['error'],
    clears: false,
    explain:
      'init, export (JSONL), strip and a new target are written only into a folder that exists; sluice makes no folder for a file (a mistyped --out would leave a tree of them). A path through a file (notes.txt/x.db) has no folder at all, for a segment export or the demo too.',
    repair: null,
  },
  PROJECTION_OUTDATED: {
    kinds: ['error'],
    clears: false,
    explain:
      "A running sync compiled the projection against columns its source table no longer has (sluice alter ran during the run); nothing was applied. The next run (a follower's next pass) compiles it again and goes on.",
    repair: null,
  },
  NOT_A_TARGET: {
    kinds: ['error'],
    clears: false,
    explain: 'The file is not a sluice target (it has no _sluice_projections table): there is nothing of sluice in it to act on.',
    repair: null,
  },
  STORED_VALUE_UNKNOWN: {
    kinds: ['error'],
    clears: false,
    explain:
      "A row of sluice's own tables, in a source or a target, holds a value this sluice does not read: a newer sluice wrote it, or it was edited by hand.",
    repair: null,
  },
  CONSUMER_NOT_FOUND: {
    kinds: ['error'],
    clears: false,
    explain: 'sluice forget: the source acknowledges no consumer of that name (sluice status lists them).',
    repair: null,
  },
  PROJECTION_NOT_FOUND: {
    kinds: ['error'],
    clears: false,
    explain: 'The target (or the sync) has no projection of that name: drop, reinit and sync --reinit list the names there are.',
    repair: null,
    replaces: ['UNKNOWN_PROJECTION'],
  },
  ALTER_REFUSED: {
    kinds: ['error'],
    clears: false,
    explain:
      'sluice alter refused the script (another file, a pragma, transaction control, sluice objects, writes to a captured table, a table left uncapturable); nothing was changed.',
    repair: null,
  },
  ALTER_FAILED: {
    kinds: ['error'],
    clears: false,
    explain: 'A statement of the sluice alter script failed in SQLite; the whole script was rolled back.',
    repair: null,
  },

  // Bad input.
  BAD_BATCH: { kinds: ['error'], clears: false, explain: 'The batch size is not a whole number >= 1.', repair: null },
  BAD_CONSUMER: { kinds: ['error'], clears: false, explain: 'The consumer name is empty.', repair: null },
  BAD_DEFINITION: { kinds: ['error'], clears: false, explain: 'The projection definition does not validate.', repair: null },
  BAD_FORMAT: {
    kinds: ['error'],
    clears: false,
    explain: 'The --format is not one the command writes or reads (jsonl, segment).',
    repair: null,
  },
  BAD_EXPRESSION: {
    kinds: ['error'],
    clears: false,
    explain: 'A projection expression is not deterministic SQL over the source columns.',
    repair: null,
  },
  BAD_TOKENIZER: {
    kinds: ['error'],
    clears: false,
    explain: "An fts5 projection's tokenize names a tokenizer or option FTS5 does not have.",
    repair: null,
  },
  BAD_LIMIT: { kinds: ['error'], clears: false, explain: 'The batch limit is not a whole number >= 1.', repair: null },
  BAD_MAX_ROWS: { kinds: ['error'], clears: false, explain: '--max-rows is not a whole number >= 0.', repair: null },
  BAD_MODE: { kinds: ['error'], clears: false, explain: 'The capture mode is unknown.', repair: null },
  BAD_INCLUDE: {
    kinds: ['error'],
    clears: false,
    explain: 'A column named in --include (to capture) is also named in --exclude (to leave out).',
    repair: null,
  },
  BAD_PATH: {
    kinds: ['error'],
    clears: false,
    explain:
      'A database path is empty (an unset shell variable, say): SQLite would make a temporary database of it, deleted when it closes, and nothing would be kept. Or a path where sluice writes a file (--out, a new target) ends in "/": it names a folder.',
    repair: null,
  },
  BAD_REASON: { kinds: ['error'], clears: false, explain: 'bump needs a non-empty reason.', repair: null },
  BAD_RETENTION: { kinds: ['error'], clears: false, explain: 'The retention is below the minimum or not a whole number.', repair: null },
  BAD_SQL: { kinds: ['error'], clears: false, explain: 'The query does not compile.', repair: null },
  BAD_VALUE: { kinds: ['error'], clears: false, explain: 'Not a sluice JSON value.', repair: null },
  CURSOR_REQUIRED: { kinds: ['error'], clears: false, explain: 'The call needs a cursor.', repair: null },
  TABLE_NOT_IN_CURSOR: { kinds: ['error'], clears: false, explain: 'A table asked for is not covered by the cursor.', repair: null },
  QUERY_REFUSED: { kinds: ['error'], clears: false, explain: 'The query does something sluice query does not run.', repair: null },
  ROW_BUDGET_EXCEEDED: { kinds: ['error'], clears: false, explain: 'The query returned more rows than --max-rows.', repair: null },
  TEXT_ENCODING: {
    kinds: ['error'],
    clears: false,
    explain: 'A TEXT value has no form in the database encoding (an unpaired surrogate).',
    repair: null,
  },

  // Databases.
  DB_NOT_FOUND: {
    kinds: ['error'],
    clears: false,
    explain: 'The database file does not exist; sluice never creates one it was asked to read.',
    repair: null,
  },
  TARGET_BUSY: {
    kinds: ['error'],
    clears: false,
    explain:
      "Another process held the target's write lock past the busy timeout (sync's --busy-timeout, 5 s for other commands); nothing of the batch was committed.",
    repair: null,
  },
  SOURCE_BUSY: {
    kinds: ['error'],
    clears: false,
    explain:
      "Another process held the source's write lock past the busy timeout (sync's --busy-timeout: needed to re-arm capture; the 5 s other commands wait to write it, or to read a source in a rollback journal mode).",
    repair: null,
  },
  DB_BUSY: {
    kinds: ['error'],
    clears: false,
    explain:
      'Another process held a write lock on the database past the 5 s busy timeout (sluice query on any file, or a command whose source or target it may be).',
    repair: null,
  },
  BAD_BUSY_TIMEOUT: { kinds: ['error'], clears: false, explain: '--busy-timeout is not a whole number of milliseconds.', repair: null },
  METRICS_LISTEN_FAILED: {
    kinds: ['error'],
    clears: false,
    explain:
      'The --metrics HOST:PORT (or the "listen" of a pipeline file, for sluice run) could not be bound (the port is in use, or the host is not an address of this machine); nothing was synced (run retries it with backoff, its targets go on).',
    repair: null,
  },
  TARGET_FULL: {
    kinds: ['error'],
    clears: false,
    explain: "The disk or the target's size limit (--max-target-mb) is full; nothing of the batch was committed.",
    repair: null,
  },
  TARGET_CORRUPT: {
    kinds: ['error'],
    clears: false,
    explain: 'The target file is damaged (SQLITE_CORRUPT): restore it, or delete it and sync again to rebuild.',
    repair: null,
  },
  SOURCE_CORRUPT: { kinds: ['error'], clears: false, explain: 'The source file is damaged (SQLITE_CORRUPT).', repair: null },
  TARGET_TRIGGER_BROKEN: {
    kinds: ['error'],
    clears: false,
    explain:
      "A user's trigger on a projection's table in the target no longer fits its table (its body names a table, column or function that is not there): SQLite makes a trigger without reading its body, so every write sluice makes to that table fails, and nothing of the batch is committed. The message names the trigger, its table and the file.",
    repair: null,
  },
  TARGET_GONE: {
    kinds: ['error'],
    clears: false,
    explain:
      'The target file was deleted or replaced while sync or subscribe (--follow, or a sluice run part) ran; it stops and writes nothing more. The next run rebuilds the target, or goes on from the cursor of a file put back at its path.',
    repair: null,
  },
  TARGET_FOLLOWED: {
    kinds: ['error'],
    clears: false,
    explain:
      'Another process follows this target (sync --follow or subscribe --follow holds its lock, the file TARGET-follower), through this name or another name of the same file (a hard link beside it, whose lock is held under that name): a target takes one follower. The message names the process; stop it first, or follow into another target. One-shot commands run beside a follower.',
    repair: null,
  },
  SOURCE_REPLACED: {
    kinds: ['error'],
    clears: false,
    explain:
      "The source's path came to name another file (a copy renamed over it, e.g. after VACUUM INTO) or none while a reader (sync --follow, export --follow, a long sync or export) held the file it opened; it stops, having made no cursor for the new file, and its failure stays recorded (health exits 3) until a sync succeeds. Run it again: a new run reads the new file and rebuilds from a snapshot (FILE_CHANGED).",
    repair: null,
  },
  DB_NOT_WRITABLE: { kinds: ['error'], clears: false, explain: 'This user may not write the database (or its folder).', repair: null },
  ACCESS_DENIED: {
    kinds: ['error'],
    clears: false,
    explain: 'This user may not write a path a command writes (an export file or folder, a pipeline file init writes), or its folder.',
    repair: null,
  },
  DB_OPEN_FAILED: { kinds: ['error'], clears: false, explain: 'The database could not be opened.', repair: null },
  NOT_A_DATABASE: { kinds: ['error'], clears: false, explain: 'The file is not a SQLite database.', repair: null },
  TARGET_IS_SOURCE: {
    kinds: ['error'],
    clears: false,
    explain:
      'The target has sluice capture enabled: it is a source. When the source given is a sluice target, the two look swapped: the message gives the command with them in the right order.',
    repair: null,
  },
  TARGET_ENCODING: { kinds: ['error'], clears: false, explain: "The target's text encoding is not the source's.", repair: null },
  DEMO_WOULD_OVERWRITE: {
    kinds: ['error'],
    clears: false,
    explain: 'demo --dir names something other than a new or empty folder.',
    repair: null,
  },
  INTERNAL: {
    kinds: ['error'],
    clears: false,
    explain: 'An error with no code of its own (a bug, or an unexpected failure).',
    repair: null,
  },

  // Projections and sync.
  DEFINITION_NOT_FOUND: {
    kinds: ['error'],
    clears: false,
    explain: 'The projection file does not exist, or is a folder (a definition is read from one file; name each file in it).',
    repair: null,
  },
  CUSTOM_MODULE_NOT_FOUND: { kinds: ['error'], clears: false, explain: "A custom projection's handler module is not there.", repair: null },
  CUSTOM_MODULE_FAILED: { kinds: ['error'], clears: false, explain: "A custom projection's handler module failed to load.", repair: null },
  CUSTOM_WROTE_SLUICE: {
    kinds: ['error'],
    clears: false,
    explain:
      "A custom projection's handler ran a statement that would write one of sluice's own tables (`_sluice_...`: the projections' cursors and definitions, the target's info), attach or detach a database, or (under import and subscribe) write a database sluice attached to read a batch from (a segment being imported): the statement was refused before it ran, and its batch was rolled back.",
    repair: null,
  },
  CUSTOM_WROTE_PROJECTION: {
    kinds: ['error'],
    clears: false,
    explain:
      "A custom projection's handler ran a statement that would write a table another projection of the target owns (a mirror's or a map's table, an fts5 index, another custom projection's declared table), often by naming its own bookkeeping table like a mirrored one: the statement was refused before it ran, and its batch was rolled back.",
    repair: null,
  },
  CUSTOM_WROTE_SOURCE: {
    kinds: ['error'],
    clears: false,
    explain:
      "A custom projection's handler ran a statement that would write the source database (a raw SQL statement naming a table without the target's schema, or a TEMP trigger or view that writes it): the statement was refused before it ran, and its batch was rolled back.",
    repair: null,
  },
  CUSTOM_TRANSACTION_CONTROL: {
    kinds: ['error'],
    clears: false,
    explain:
      "A custom projection's handler ran a transaction control statement (BEGIN, COMMIT or END, ROLLBACK, SAVEPOINT, RELEASE): it runs inside sluice's transaction for its batch, which commits its rows and cursor together, so the statement was refused before it ran, and its batch was rolled back.",
    repair: null,
  },
  CUSTOM_HANDLER_LATE_WRITE: {
    kinds: ['error'],
    clears: false,
    explain:
      "A custom projection's handler ran a query through its ctx after its apply or init had returned (ctx.db called without await, or a ctx kept for later): the query was not run, and its batch was rolled back (or, when the query came after the batch had committed, the projection's next batch fails: rebuild it).",
    repair: null,
  },
  CUSTOM_TABLE_UNDECLARED: {
    kinds: ['error'],
    clears: false,
    explain:
      'A custom projection\'s handler failed after reading a name in ctx.tables that its definition does not declare in "tables" (it read as undefined): nothing of the batch was committed. Declare the table in "tables", or use the name as declared.',
    repair: null,
  },
  DUPLICATE_COLUMN: { kinds: ['error'], clears: false, explain: 'A target column appears twice.', repair: null },
  DUPLICATE_PROJECTION: { kinds: ['error'], clears: false, explain: 'Two projections have one name.', repair: null },
  COLLATION_UNKNOWN: {
    kinds: ['error'],
    clears: false,
    explain:
      "A key (at enable) or a column a projection copies (when it is built) is declared with a collation the application registers on its own connections, not one SQLite builds in (BINARY, NOCASE, RTRIM): sluice's connections do not have it, so it could neither key nor compare the copies.",
    repair: null,
  },
  KEY_COLLATION_MISMATCH: {
    kinds: ['error'],
    clears: false,
    explain: "The source key's collation differs from the column's declared one.",
    repair: null,
  },
  MISSING_KEY: { kinds: ['error'], clears: false, explain: 'A map leaves out a source key column.', repair: null },
  RESERVED_COLUMN: { kinds: ['error'], clears: false, explain: 'An fts5 index cannot have a column of this name.', repair: null },
  TARGET_COLLISION: { kinds: ['error'], clears: false, explain: 'Two projections write one target table.', repair: null },
  TARGET_TABLE_EXISTS: {
    kinds: ['error', 'alter'],
    clears: false,
    explain:
      'The target table exists and sluice did not make it: a build of the projection (a first one, or into another table) is refused, nothing written.',
    repair:
      'the target table of {projection} in {target} is not sluice\'s: drop or rename it there (it may be your data), or set another "target" in the definition of {projection}, then run sluice explain again',
  },
  UNKNOWN_COLUMN: { kinds: ['error'], clears: false, explain: 'The source table has no such column.', repair: null },
  KEY_COLUMN_EXCLUDED: {
    kinds: ['error'],
    clears: false,
    explain: 'A primary-key column cannot be left out of capture: every event and target row is found by the key.',
    repair: null,
  },
  GENERATED_FROM_EXCLUDED: {
    kinds: ['error'],
    clears: false,
    explain:
      'A generated column of a table is computed from a column left out of capture (directly or through another generated column): capturing it would journal the excluded value. Leave it out of capture too. A table armed before such a column was added stays unarmed (SCHEMA_CHANGED) until enable is told.',
    repair: null,
  },
  TABLE_TOO_WIDE: {
    kinds: ['error'],
    clears: false,
    explain:
      "A table has more columns to capture than the journal can hold: both images of each, within SQLite's 2000 columns a table, make 997 the most. Leave columns out of capture (enable --exclude), or capture it in keys mode.",
    repair: null,
  },
  EXCLUDE_NOT_APPLIED: {
    kinds: ['error'],
    clears: false,
    explain:
      "A pipeline file leaves a column out of capture that its source still captures (enable could not apply the file's exclude). No target of that source is synced until it does: its events and snapshots would carry the column.",
    repair: null,
  },
  EXCLUDED_COLUMN_READ: {
    kinds: ['error'],
    clears: false,
    explain: 'A projection reads a column its source table leaves out of capture: no snapshot, event or target holds that column.',
    repair: null,
  },
  UNKNOWN_SOURCE_TABLE: { kinds: ['error'], clears: false, explain: 'The source has no such table.', repair: null },
  NOTHING_TO_SYNC: {
    kinds: ['error'],
    clears: false,
    explain: 'The source captures no table sync can mirror (none in images mode, or none whose mirror can be made).',
    repair: null,
  },
  BATCH_GAP: {
    kinds: ['error'],
    clears: false,
    explain: 'The batch starts after the stored cursor: events in between would be skipped.',
    repair: null,
  },

  // export and import.
  EXPORT_CURSOR_FILE: {
    kinds: ['error'],
    clears: false,
    explain: 'The cursor file of an export does not hold an export position.',
    repair: null,
  },
  EXPORT_TABLES_CHANGED: {
    kinds: ['error'],
    clears: false,
    explain:
      "A resumed export was given a --table set other than the tables its cursor carries: it would export the cursor's tables, without a snapshot, and not the ones asked for.",
    repair: null,
  },
  EXPORT_FILE_SHORTER: {
    kinds: ['error'],
    clears: false,
    explain: 'The export file is shorter than its cursor file says was complete.',
    repair: null,
  },
  EXPORT_FILE_MISMATCH: {
    kinds: ['error'],
    clears: false,
    explain:
      "A resumed export's --out is not the one its cursor file describes: the JSONL file's byte at the saved offset does not end the marker line of the saved cursor (its seq and source), or the segment folder holds no segment ending at the cursor's seq. The file (or folder) was replaced or edited; nothing was written.",
    repair: null,
  },
  EXPORT_CURSOR_MISSING: {
    kinds: ['error'],
    clears: false,
    explain:
      'An export without --since was given a --out that already holds an export (a non-empty file, a folder holding segments) and no cursor file beside it: a new snapshot appended to it would put a second history in one file. Nothing was written.',
    repair: null,
  },
  EXPORT_LOCKED: {
    kinds: ['error'],
    clears: false,
    explain:
      'Another export writes this --out (it holds the lock OUT.lock beside it, for as long as it runs, one-shot or --follow): one export at a time appends to a file or a segment folder. The message names the process; stop it first (kill PID), or export to another --out.',
    repair: null,
  },
  IMPORT_NOT_FOUND: {
    kinds: ['error'],
    clears: false,
    explain:
      "The import file does not exist, or the folder passed holds no segment (*.segment) and is no segment export's (no DIR.cursor beside it).",
    repair: null,
  },
  IMPORT_NOT_A_FILE: {
    kinds: ['error'],
    clears: false,
    explain: 'The import input is a pipe, a socket or a device, not a regular file or a folder of segments.',
    repair: null,
  },
  IMPORT_BAD_VALUE: { kinds: ['error'], clears: false, explain: "A line's value does not fit the table's shape.", repair: null },
  IMPORT_BATCH_MISMATCH: { kinds: ['error'], clears: false, explain: "A batch's lines do not match its closing marker.", repair: null },
  IMPORT_FORMAT_VERSION: {
    kinds: ['error'],
    clears: false,
    explain: 'The file is of an export format this sluice does not read.',
    repair: null,
  },
  IMPORT_MALFORMED_LINE: { kinds: ['error'], clears: false, explain: 'A line is not JSON.', repair: null },
  IMPORT_MIXED_SOURCES: { kinds: ['error'], clears: false, explain: 'The file holds lines of more than one source.', repair: null },
  IMPORT_SEGMENT_DIGEST: {
    kinds: ['error'],
    clears: false,
    explain: "A segment's rows do not digest to the digest its meta holds: it was edited after it was written.",
    repair: null,
  },
  IMPORT_SEGMENT_MISMATCH: {
    kinds: ['error'],
    clears: false,
    explain: "A segment's rows do not match its meta (counts, seq ranges, ops, images or changed-column masks).",
    repair: null,
  },
  IMPORT_SEGMENT_SCHEMA: {
    kinds: ['error'],
    clears: false,
    explain: 'A segment holds a schema object its wire schema does not name (a table, view, trigger or index), or is not a sluice segment.',
    repair: null,
  },
  IMPORT_SEGMENT_TRUNCATED: {
    kinds: ['error'],
    clears: false,
    explain: 'A segment file is cut short, has bytes appended, is in WAL mode, or changed while it was read.',
    repair: null,
  },
  IMPORT_SEGMENT_VERSION: {
    kinds: ['error'],
    clears: false,
    explain: 'A segment is of a wire version this sluice does not read.',
    repair: null,
  },
  IMPORT_NO_SHAPE: {
    kinds: ['error'],
    clears: false,
    explain: 'Neither the file nor the target knows the shape of a table.',
    repair: null,
  },
  IMPORT_NO_SNAPSHOT: {
    kinds: ['error'],
    clears: false,
    explain:
      'The file has no snapshot where one is needed: the target has no projections (or this one has no rows yet), or a definition given differs from the one the projection was built with in a way only a rebuild follows (as explain classifies it).',
    repair: null,
  },
  IMPORT_DUPLICATE_KEY: {
    kinds: ['error'],
    clears: false,
    explain: "A snapshot holds two rows with one value of its table's primary key: the file or segment was edited.",
    repair: null,
  },
  IMPORT_OUT_OF_ORDER: {
    kinds: ['error'],
    clears: false,
    explain: 'Lines of the file were moved, lost or edited: out of place, or disagreeing with their section about its seq.',
    repair: null,
  },
  IMPORT_SNAPSHOT_MISMATCH: {
    kinds: ['error'],
    clears: false,
    explain: "A snapshot's lines do not match its closing marker.",
    repair: null,
  },
  // publish and subscribe (NATS JetStream).
  BROKER_UNREACHABLE: { kinds: ['error'], clears: false, explain: 'The NATS server does not accept a connection.', repair: null },
  BROKER_AUTH_FAILED: {
    kinds: ['error'],
    clears: false,
    explain: 'The NATS server refused the login, or the credentials to log in with (a .creds, password or token file) cannot be read.',
    repair: null,
  },
  BROKER_TLS_FAILED: {
    kinds: ['error'],
    clears: false,
    explain:
      'TLS with the NATS server failed: its certificate is not signed by a trusted CA (pass the CA with --nats-tls-ca), or a CA, client certificate or key file cannot be read.',
    repair: null,
  },
  BROKER_NO_JETSTREAM: { kinds: ['error'], clears: false, explain: 'The NATS server runs without JetStream.', repair: null },
  BROKER_NO_STREAM: { kinds: ['error'], clears: false, explain: "The source's stream does not exist on the server.", repair: null },
  BROKER_STREAM_SUBJECTS: {
    kinds: ['error'],
    clears: false,
    explain: "The stream does not take the source's subjects.",
    repair: null,
  },
  BROKER_SUBJECTS_TAKEN: {
    kinds: ['error'],
    clears: false,
    explain: "Another stream already takes the source's subjects, so a stream of another name cannot be made for them.",
    repair: null,
  },
  BROKER_MESSAGE_TOO_LARGE: {
    kinds: ['error'],
    clears: false,
    explain: "One event or snapshot row is larger than the server's max_payload.",
    repair: null,
  },
  BROKER_STREAM_LIMITS: {
    kinds: ['error'],
    clears: false,
    explain:
      "The stream's limits (max_msgs, max_bytes, max_msgs_per_subject, max_age, with its discard policy) cannot hold one snapshot of the source, a stream with discard new is full, or the stream has max_msgs_per_subject, which drops old batches behind the snapshot it keeps: no subscriber could start from it and catch up. Or one event or snapshot row is larger than the stream's max_msg_size lets a message carry.",
    repair: null,
  },
  BROKER_TABLE_NOT_PUBLISHED: {
    kinds: ['error'],
    clears: false,
    explain:
      "A subscriber's projection reads a table the stream does not carry: the source does not capture it (never enabled, or disabled), so no snapshot or batch of the stream holds it.",
    repair: null,
  },
  BROKER_FORMAT_NOT_PUBLISHED: {
    kinds: ['error'],
    clears: false,
    explain:
      "A subscriber reads batches of a format (--format) the stream holds none of the source's last batches in: its publisher publishes another format only.",
    repair: null,
  },
  BROKER_NO_SNAPSHOT: {
    kinds: ['error'],
    clears: false,
    explain: 'A subscriber needs a snapshot and the stream holds none.',
    repair: null,
  },
  PUBLISH_STATE_FILE: {
    kinds: ['error'],
    clears: false,
    explain: "The publisher's state file beside the source does not hold a cursor.",
    repair: null,
  },
  STREAM_TABLES_ADDED: {
    kinds: ['rebuilt'],
    clears: true,
    explain:
      'The source captures a table its stream did not carry (enabled after publishing began), so the publisher published a snapshot that holds it; its batches carry it from there.',
    repair: null,
  },
  STREAM_FORMAT_ADDED: {
    kinds: ['rebuilt'],
    clears: true,
    explain:
      "The publisher publishes a format (--format) whose batches in the stream start after the stream's last snapshot (the format was added to the publisher later), so it published a snapshot they start from; a subscriber of that format starts from it.",
    repair: null,
  },
  STREAM_HAD_NO_SNAPSHOT: {
    kinds: ['rebuilt'],
    clears: true,
    explain:
      'The stream held no snapshot of the source (a first publish, or a server that came back without the stream), so the publisher published one.',
    repair: null,
    replaces: ['NO_SNAPSHOT_PUBLISHED'],
  },
  SNAPSHOT_PAST_RETENTION: {
    kinds: ['rebuilt'],
    clears: true,
    explain: "The stream's retention no longer reaches back to its snapshot, so the publisher published a new one.",
    repair: null,
  },
  SUBSCRIBER_BEHIND_STREAM: {
    kinds: ['rebuilt'],
    clears: true,
    explain: "The target's cursor is older than the first batch the stream still holds: subscribe rebuilt it from the published snapshot.",
    repair: null,
  },
} as const satisfies Record<string, ReasonInfo>;

export type ReasonCode = keyof typeof REASONS;

/** Codes named in a type: `Reason<'TARGET_DIVERGED' | 'UNCAPTURED_REPLACE'>` does not compile with a code that is not in REASONS. */
export type Reason<C extends ReasonCode> = C;

/** The codes that play the part `K`. */
export type ReasonOf<K extends ReasonKind> = { [C in ReasonCode]: K extends (typeof REASONS)[C]['kinds'][number] ? C : never }[ReasonCode];

export function isReasonCode(code: string): code is ReasonCode {
  return Object.hasOwn(REASONS, code);
}

/** Each retired code (ReasonInfo.replaces) and the code that replaces it. */
export const RETIRED_CODES: ReadonlyMap<string, ReasonCode> = new Map(
  (Object.keys(REASONS) as ReasonCode[]).flatMap((c) => ((REASONS[c] as ReasonInfo).replaces ?? []).map((old) => [old, c] as const)),
);

/** The retired names of `code`, to go beside it as `aliases` in --json ([] for a code never renamed). */
export function aliasesOf(code: string): readonly string[] {
  return isReasonCode(code) ? ((REASONS[code] as ReasonInfo).replaces ?? []) : [];
}

/** `{aliases}` to spread beside a code in a --json object: its retired names, or nothing for a code never renamed. */
export function aliasFields(code: string): { readonly aliases?: readonly string[] } {
  const old = aliasesOf(code);
  return old.length === 0 ? {} : { aliases: old };
}

/** `code` as this release names it: a retired code (one an older release wrote into a file) becomes the one that replaced it. */
export function currentCode(code: string): string {
  return RETIRED_CODES.get(code) ?? code;
}

/** The codes that play the part `kind`, and clear by themselves when `clears` is given. */
export function reasonsOf<K extends ReasonKind>(kind: K, clears?: boolean): ReadonlySet<ReasonOf<K>> {
  const codes = (Object.keys(REASONS) as ReasonCode[]).filter((c) => {
    const r: ReasonInfo = REASONS[c];
    return r.kinds.includes(kind) && (clears === undefined || r.clears === clears);
  });
  return new Set(codes as ReasonOf<K>[]);
}

/**
 * Values for a repair template's placeholders, as they are to be typed
 * (quote them first). A value not known where the repair is made (the
 * source of a projection made by import, whose path was never recorded) is
 * left undefined: the command then names it in capitals, said in words
 * after it (`SOURCE: the database cache.db is synced from`).
 */
export interface RepairVars {
  readonly source?: string | undefined;
  readonly target?: string | undefined;
  /** Required by a repair; a command of COMMANDS without {projection} goes without. */
  readonly projection?: string | undefined;
  /** The projection's source table. */
  readonly table?: string | undefined;
}

/** What an unknown value of RepairVars is, in words. */
const UNKNOWN_VARS = {
  source: (v: RepairVars) => `the database ${v.target ?? 'the target'} is synced from`,
  target: (v: RepairVars) => `the database that holds ${v.projection ?? 'the projection'}`,
  projection: () => 'the name of the projection',
  table: (v: RepairVars) => `the source table ${v.projection ?? 'the projection'} reads`,
} as const;

/** `template` with {source}, {target}, {projection} and {table} filled in from `vars` (see RepairVars for an unknown one). */
export function fillRepair(template: string, vars: RepairVars): string {
  const unknown = new Map<string, string>();
  const text = template.replace(/\{(source|target|projection|table)\}/g, (_, k: keyof RepairVars) => {
    const v = vars[k];
    if (v !== undefined) return v;
    const word = k.toUpperCase();
    unknown.set(word, UNKNOWN_VARS[k](vars));
    return word;
  });
  return unknown.size === 0 ? text : `${text} (${[...unknown].map(([w, what]) => `${w}: ${what}`).join('; ')})`;
}

/**
 * "CODE: what repairs it, with the command", for a suspension; a reason
 * without a repair of its own (or none) gets the rebuild.
 */
export function repairFor(reason: string | null | undefined, vars: RepairVars): string {
  const current = reason === null || reason === undefined ? undefined : currentCode(reason);
  const own = current !== undefined && isReasonCode(current) ? (REASONS[current] as ReasonInfo).repair : null;
  return `${current ?? 'suspended'}: ${fillRepair(own ?? DEFAULT_REPAIR, vars)}`;
}
