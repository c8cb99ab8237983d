import type { Db, JsonValue } from '../sqlite/index.ts';
import type { Reason } from '../reasons.ts';
import type { ChangeBatch, SnapshotRows } from '../feed/index.ts';

export type { SnapshotRows } from '../feed/index.ts';
import type { ProjectionDefinition } from './definition.ts';
import type { CompiledOf, SourceShape, TargetColumn } from './compiled.ts';
import type { KindAlterRules } from './evolution/kinds.ts';

/*
 * What a projection kind is. Each kind lives in its own folder under
 * kinds/ and is listed once in kinds/registry.ts; nothing else branches on
 * a kind's name. The applier (apply/projections/applier.ts) is the only place where a
 * snapshot or a batch meets a kind.
 */

export type KindName = ProjectionDefinition['kind'];
export type DefinitionOf<K extends KindName> = Extract<ProjectionDefinition, { kind: K }>;

/** A kind's target layout for one definition over one source shape. */
interface KindLayout {
  readonly targetTable: string;
  readonly columns: readonly TargetColumn[];
  /** Target key columns ([] when the kind keys nothing itself). */
  readonly key: readonly string[];
  readonly filter: string | null;
  /** Target rows are the source images unchanged (a mirror: images need no projecting). */
  readonly identity?: boolean;
}

/** The first event of a batch whose before-image does not match the target (nothing of the batch is kept). */
interface Mismatch {
  readonly seq: number;
  readonly key: readonly JsonValue[];
  /** `UNCAPTURED_REPLACE`: an insert found its key present; `TARGET_DIVERGED`: the before-image differs. */
  readonly reason: Reason<'TARGET_DIVERGED' | 'UNCAPTURED_REPLACE'>;
}

interface BatchResult {
  /** Events applied (net transitions for the set-based kinds). */
  readonly applied: number;
  readonly mismatch?: Mismatch;
  /** The kind's own tables refused the batch (an FTS5 index asked to remove entries it does not hold): the rows are not what sluice wrote. */
  readonly refused?: { readonly reason: Reason<'TARGET_DIVERGED'>; readonly message: string };
}

/** A snapshot being built into a kind's tables, in the caller's transaction. */
export interface SnapshotBuild {
  /** Adds rows (a kind may read `rows()` only at finish: it must stay readable until then). */
  add(rows: SnapshotRows): Promise<void>;
  /** After the last rows: how many rows the build took in all. */
  finish(): Promise<number>;
}

/**
 * A key one of a kind's tables must carry, a PRIMARY KEY or a UNIQUE index
 * on exactly `key`, what its writes use it for and what they do without it.
 */
export interface TableKey {
  readonly table: string;
  readonly key: readonly string[];
  /** Only an INTEGER PRIMARY KEY on the one column counts (the table's rowid), not a UNIQUE index. */
  readonly rowid?: boolean;
  /** What sync does by it: "which sync replaces rows by". */
  readonly uses: string;
  /** What a sync would do to a table without it: "a sync would add a second row for a key". */
  readonly without: string;
}

/** A column of one of a kind's tables as create() declares it. */
export interface TableColumn {
  readonly name: string;
  /** Its declared type ('' none), whose affinity decides what a value written to it becomes; absent: not declared (an FTS5 table's columns). */
  readonly type?: string;
  /** Its collation (BINARY when none), by which its keys and comparisons of its text go; absent with `type`. */
  readonly collate?: string;
}

/** The columns one of a kind's tables has as create() makes it. */
export interface TableColumns {
  readonly table: string;
  readonly columns: readonly TableColumn[];
  /**
   * Made by CREATE VIRTUAL TABLE ... USING `module`(`args`), the arguments
   * as create() writes them (an FTS5 index: its columns, content options,
   * tokenizer), and what a message calls it ("FTS5 index"). One declared
   * otherwise (made again by hand with a column UNINDEXED, another
   * tokenizer, detail or prefix), or a plain table, answers unlike the
   * definition's, whatever rows it holds.
   */
  readonly virtual?: { readonly module: string; readonly args: readonly string[]; readonly noun: string };
}

/** How verify compares a kind's rows with the source: the same per-key hash on both sides. */
export interface KindVerification<P> {
  /** The target side: a FROM item in `schema`, the SQL of its key columns (target key order) and of the values hashed. */
  target(schema: string, p: P): { readonly from: string; readonly keys: readonly string[]; readonly values: readonly string[] };
  /** The source side: SQL over a source row of the values hashed, in the same order. */
  sourceValues(p: P): readonly string[];
  /**
   * What the per-key hashes cannot see of its tables, checked by the kind
   * itself in the caller's transaction (it may need to be a write
   * transaction; nothing is written): true when they agree, false when not,
   * undefined when nothing can tell. fts5: the index against its key table.
   */
  ownCheck?(db: Db, schema: string, p: P): boolean | undefined;
}

export interface ProjectionKind<K extends KindName> {
  readonly kind: K;
  /**
   * The source columns its rows depend on, besides the key (undefined: the
   * whole row). The fingerprint covers only those, so a column added,
   * dropped or renamed beside them leaves it as it was (sluice alter).
   */
  columnsRead(def: DefinitionOf<K>): readonly string[] | undefined;
  /** Its target table, columns, key and filter, from the definition and the source's shape (errors name what is wrong). */
  layout(def: DefinitionOf<K>, source: SourceShape): KindLayout;
  /**
   * The source columns whose change can change its rows, the key included
   * (undefined: any column), for `layout` over `source`: an update that
   * changes none of them is skipped (apply/sync/applier.ts). Taken from
   * what SQLite compiles (projection/read-set.ts) or what the definition
   * declares, never guessed from SQL text; unknown names are errors.
   */
  reads(def: DefinitionOf<K>, layout: KindLayout, source: SourceShape): readonly string[] | undefined;
  /**
   * The tables it owns in the target when its main table is `table` (a
   * rebuild may drop them; nothing else may have their names). `def` is the
   * definition as data (a stored one is read back from JSON).
   */
  ownedTables(table: string, def: DefinitionOf<K>): string[];
  /**
   * The tables SQLite itself makes beside its main table `table` when
   * create() makes it (an FTS5 table's `_data`, `_idx`, ...): they go with
   * that table, but no other table may have their names either, or create()
   * fails. Undefined: none.
   */
  sqliteTables?(table: string): string[];
  /** It reads before-images: its source table must be captured in images mode (a custom handler also takes keys-mode events). */
  readonly needsImages: boolean;
  /** Default events per target transaction (set-based kinds: large; per-event ones: short write transactions). */
  readonly defaultBatch: number;
  /** Target rows are keyed by the source key with the key columns' declared collations (checkKeyCollations). */
  readonly keysRows: boolean;
  /**
   * What a UNIQUE index a user added to one of `uniqueTables(table)` means:
   * `guard`, rows are written without REPLACE and a batch that breaks the
   * index is undone and suspends the projection (TARGET_CONSTRAINT) until
   * the index goes; `refuse`, any batch with events suspends (its tables are
   * updated in place or with REPLACE, which such an index would silently
   * turn into deletes).
   */
  readonly foreignUnique: 'guard' | 'refuse';
  uniqueTables(table: string): string[];
  /** The table holding one row per projected row when its main table is `table` (undefined: a custom handler's state). */
  rowTable(table: string): string | undefined;
  /**
   * How a rebuild of a live one is built beside it in bounded transactions
   * (apply/rebuild/shadow-build.ts):
   * - `copy`: its rows are one table keyed by the source key, filled by
   *   build() from any rows of the source, so a key the journal touched is
   *   deleted and built again from the source row;
   * - `replay`: built from a consistent staged copy of the source rows, in
   *   parts (build() called once per part), then caught up by applying the
   *   journal's events to it (apply() at the shadow's name);
   * - undefined: it is rebuilt in one transaction (its tables are not known).
   */
  shadowBuild(def: DefinitionOf<K>): 'copy' | 'replay' | undefined;
  /**
   * The columns of its tables as create() makes them: a table whose columns
   * are other (added, dropped or renamed by hand) or declared with another
   * type affinity or collation (made again by hand) suspends it before a
   * batch is applied, and health says so (apply/check/target-shape.ts,
   * tableShapeProblem). [] when sluice makes no table of it (a custom
   * handler's tables are its own).
   */
  tableColumns(p: CompiledOf<K>): readonly TableColumns[];
  /**
   * The keys its tables must carry, by which its writes find or replace a
   * row: a table made again by hand without one (CREATE TABLE ... AS
   * SELECT), or with it under another collation, suspends it before a batch
   * is applied, and health says so (the same rule). [] when sluice makes
   * no keyed table of it.
   */
  keyedBy(p: CompiledOf<K>): readonly TableKey[];
  /**
   * Its tables are made by create(), so one missing from a built target was
   * dropped by hand (health says so); false: its code makes them when it
   * chooses (a custom handler's declared tables).
   */
  readonly makesTables: boolean;
  /** Creates its tables with main table `at`: a shadow name while a snapshot is built (p.targetTable is where they will live). */
  create(db: Db, schema: string, p: CompiledOf<K>, at: string): void;
  /** Fills the tables made by `create(..., at)` from snapshot rows. */
  build(db: Db, schema: string, p: CompiledOf<K>, at: string): SnapshotBuild;
  /** Renames the tables built at `from` to their own names (the old ones are gone): the swap of a rebuild. */
  rename(db: Db, schema: string, p: CompiledOf<K>, from: string): void;
  /**
   * Applies a batch's rows (not the cursor) in the caller's transaction. A
   * mismatch is returned before anything of it is written by the set-based
   * path; the caller rolls back what the batch wrote either way. `strict`:
   * the kind's tables carry a user's UNIQUE index (write without REPLACE).
   */
  apply(db: Db, schema: string, p: CompiledOf<K>, batch: ChangeBatch, strict: boolean): Promise<BatchResult>;
  /** What classifying a change to it needs (explain, and the rebuild it decides on). */
  readonly alter: KindAlterRules;
  /** How verify compares it; undefined: its rows cannot be compared (a custom handler's own state). */
  readonly verification?: KindVerification<CompiledOf<K>>;
}
