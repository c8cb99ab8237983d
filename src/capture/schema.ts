/*
 * The objects sluice creates in a source. All start with `_sluice_`.
 *
 * The journal is one table with `seq INTEGER PRIMARY KEY` (the rowid, so a
 * new seq is max+1 with no counter row to update) and untyped image columns
 * c0..cN that keep every storage class natively. See docs/journal.md for the
 * measurements behind this shape.
 */

export const FORMAT_VERSION = 5;
/**
 * Formats this build upgrades in place. Format 1 had no REPLACE guard on
 * tables whose only unique key is the primary key, and no order mark:
 * enable re-arms every table with the current triggers and bumps the
 * generation. Format 2 had no changed-column mask: the journal gains its
 * `mask` column (older rows read NULL, every column changed) and each table
 * armed by format 2 gets the current triggers in the same transaction,
 * keeping its armed generation, so readers keep their cursors. Format 3
 * kept each table's last seq exact on every event (a seek and a rewrite of
 * `_sluice_last` per event): its tables get the current triggers in place
 * the same way, and the journal its tick (see LAST_TABLE). Format 4's
 * flush triggers did the whole flush in their own body, which every insert
 * paid for (see flushPending in triggers.ts): its tables get the current
 * triggers in place the same way.
 */
export const UPGRADABLE_FORMATS: readonly number[] = [1, 2, 3, 4];
export const DEFAULT_RETENTION = 1_000_000;
export const MIN_RETENTION = 1024;
/**
 * Pruning runs when a new seq is a multiple of this, inside the writer's
 * transaction. Small on purpose: a prune that touches more than the
 * statement journal's in-memory 64 KiB spills it to a temporary file for
 * that one statement (about 2.7 ms for 1,024 events), which made every
 * write of a source at its retention bound cost 4-6x the trigger floor.
 * Every 16 events stays under it (docs/journal.md, Steady state).
 */
export const PRUNE_INTERVAL = 16;

export const STATE_TABLE = '_sluice_state';
export const TABLES_TABLE = '_sluice_tables';
export const JOURNAL_TABLE = '_sluice_journal';
export const CONSUMERS_TABLE = '_sluice_consumers';
/** Rows a REPLACE is about to delete, noted by BEFORE triggers when the writer runs without recursive_triggers. */
export const PENDING_TABLE = '_sluice_pending';
/*
 * Per-table last seq, kept off the writer's hot path: the row of tid 0 is a
 * checkpoint C, and every other row holds its table's newest seq at or below
 * C. The journal's tick (every PRUNE_INTERVAL seqs, with the prune) folds
 * the events after C into the rows and moves C to the new seq. A table's
 * last seq is then max(its row, its newest event after C): one row and a
 * range of at most PRUNE_INTERVAL - 1 events (lastSeqSql), still O(1).
 * Format 3 updated the row on every event (one more statement and one more
 * WAL page per commit) and had no checkpoint row: its rows are exact.
 */
export const LAST_TABLE = '_sluice_last';
/** The checkpoint row's tid in LAST_TABLE (table ids start at 1). */
export const LAST_CHECKPOINT_TID = 0;
export const PRUNE_TRIGGER = '_sluice_journal_prune';
/**
 * The prune's work sits behind a view: the journal's trigger, which runs for
 * every event, only inserts NEW.seq into this view every PRUNE_INTERVAL
 * seqs, and the view's INSTEAD OF trigger (TICK_TRIGGER) does the work. A
 * trigger's cost for each row it fires on grows with the size of its body
 * even when its WHEN is false (docs/journal.md, Format 4).
 */
export const TICK_VIEW = '_sluice_tick';
export const TICK_VIEW_SQL = `CREATE VIEW ${TICK_VIEW} AS SELECT 0 AS seq`;
export const TICK_TRIGGER = '_sluice_journal_tick';
/**
 * An inert view sluice re-creates after every arming, so that it is the
 * newest of sluice's objects in sqlite_schema. A capture trigger (or a
 * captured table) dropped and re-created by anyone else lands after it:
 * verifyCapture sees that, even when the re-created SQL is identical.
 */
export const MARK_VIEW = '_sluice_mark';
export const MARK_VIEW_SQL = `CREATE VIEW ${MARK_VIEW} AS SELECT 1 AS sluice_order_mark`;
export const PREFIX = '_sluice_';

/**
 * The schema_version sluice's own last DDL transaction started from and
 * left. Any other change of schema_version is DDL sluice did not make: a
 * window in which a UNIQUE index may have come and gone, or a trigger been
 * missing. Readers prove continuity across it or rebuild (SCHEMA_WINDOW).
 */
export const SCHEMA_TABLE = '_sluice_schema';

/**
 * The schema changes `sluice alter` made, one row each: the journal's
 * high-water mark when it ran (events up to `seq` are in the old layout of
 * the tables it touched, later ones in the new), the schema_version span of
 * its transaction, what it did to each captured table (JSON, see
 * src/capture/ddl-log.ts), and the SQL it ran. Made by the first alter, not
 * by enable; rows a pruned cursor could no longer need are deleted by the
 * next alter.
 */
export const DDL_TABLE = '_sluice_ddl';
/**
 * The log as the alters before column lineage made it (no `lineage`
 * column): the next alter adds the column in place, with exactly the text
 * SQLite appends, so a log made so and one made fresh have the same DDL.
 */
export const LEGACY_DDL_TABLE_SQL = `CREATE TABLE ${DDL_TABLE} (id INTEGER PRIMARY KEY, seq INTEGER NOT NULL, ms INTEGER NOT NULL, sv_before INTEGER NOT NULL, sv_after INTEGER NOT NULL, tables TEXT NOT NULL, sql TEXT NOT NULL)`;
/** `lineage`: for each entry of `tables`, which column before each column after is (see src/capture/ddl-log.ts); NULL in older rows. */
export const DDL_LINEAGE_COLUMN_DEF = 'lineage TEXT';
export const DDL_TABLE_SQL = LEGACY_DDL_TABLE_SQL.replace(/\)$/, `, ${DDL_LINEAGE_COLUMN_DEF})`);

/*
 * The acknowledgements (src/feed/acknowledge.ts): one row per consumer,
 * `<projection>@<target's real path>` for sync. The first format had the
 * position alone; `kind` (the projection's kind) and `target_file` (the
 * target file's identity, JSON {dev, ino, birth}, when it acknowledged) came
 * after, added in place by the next acknowledgement, with exactly the text
 * SQLite appends, so a table made so and one made fresh have the same DDL.
 */
export const LEGACY_CONSUMERS_TABLE_SQL = `CREATE TABLE ${CONSUMERS_TABLE} (
  name TEXT PRIMARY KEY,
  cursor TEXT NOT NULL,
  seq INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL
)`;
/** The columns the consumers table gained after its first format, in the order they are added. */
export const CONSUMER_ADDED_COLUMNS: readonly (readonly [string, string])[] = [
  ['kind', 'TEXT'],
  ['target_file', 'TEXT'],
];
/** The consumers table's DDL with the first `added` of CONSUMER_ADDED_COLUMNS (0: as the first format made it). */
function consumersDdlWith(added: number): string {
  const cols = CONSUMER_ADDED_COLUMNS.slice(0, added);
  return cols.length === 0
    ? LEGACY_CONSUMERS_TABLE_SQL
    : LEGACY_CONSUMERS_TABLE_SQL.replace(/\n\)$/, `\n, ${cols.map(([n, d]) => `${n} ${d}`).join(', ')})`);
}
export const CONSUMERS_TABLE_SQL = consumersDdlWith(CONSUMER_ADDED_COLUMNS.length);
/** Every DDL the consumers table has had: the first format's, and each with more of the added columns. */
export function consumersDdlSoFar(): string[] {
  return CONSUMER_ADDED_COLUMNS.map((_, i) => consumersDdlWith(i)).concat(CONSUMERS_TABLE_SQL);
}

export const OWN_TABLES: readonly string[] = [
  STATE_TABLE,
  TABLES_TABLE,
  JOURNAL_TABLE,
  CONSUMERS_TABLE,
  PENDING_TABLE,
  LAST_TABLE,
  SCHEMA_TABLE,
  DDL_TABLE,
];

export const OP_INSERT = 1;
export const OP_UPDATE = 2;
export const OP_DELETE = 3;

export type CaptureMode = 'images' | 'keys' | 'counter';
export const CAPTURE_MODES: readonly CaptureMode[] = ['images', 'keys', 'counter'];

export interface TriggerNames {
  readonly insert: string;
  readonly update: string;
  readonly delete: string;
  readonly beforeInsert: string;
  readonly beforeUpdate: string;
  readonly flushInsert: string;
  readonly flushUpdate: string;
  /** On the view `_sluice_flush`, not on the table: journals the notes the flush triggers marked (format 5). */
  readonly flushPending: string;
}

export function triggerNames(tid: number): TriggerNames {
  const n = (s: string) => `_sluice_t${tid}_${s}`;
  return {
    insert: n('ins'),
    update: n('upd'),
    delete: n('del'),
    beforeInsert: n('bins'),
    beforeUpdate: n('bupd'),
    flushInsert: n('fins'),
    flushUpdate: n('fupd'),
    flushPending: n('pfl'),
  };
}

/** Trigger names sluice may own: per-table triggers and the prune trigger. */
export function isOwnTriggerName(name: string): boolean {
  return name === PRUNE_TRIGGER || name === TICK_TRIGGER || /^_sluice_t\d+_(ins|upd|del|bins|bupd|fins|fupd|pfl)$/.test(name);
}

/**
 * The journal's changed-column mask (src/capture/mask.ts): untyped, so it
 * holds an INTEGER or a BLOB. A fresh journal has it right after ts; one
 * upgraded from format 2 has it after the image columns it had then (ADD
 * COLUMN appends, with exactly this text), before any added since.
 */
export const MASK_COLUMN = 'mask';

/** The journal's columns a reader decodes, in the order JournalDecoder reads them: seq, tid, op, ts, mask, c0..c(width-1). */
export function journalSelectList(width: number, masked = true): string {
  const cols = Array.from({ length: width }, (_, i) => `, ${journalColumn(i)}`).join('');
  return `seq, tid, op, ts, ${maskOrNull(masked)}${cols}`;
}

/** The mask column, or NULL in its place in a journal of format 2 (not upgraded yet: no mask, every column changed). */
function maskOrNull(masked: boolean): string {
  return masked ? MASK_COLUMN : `NULL AS ${MASK_COLUMN}`;
}

export function journalColumn(i: number): string {
  return `c${i}`;
}

/** Both images of a table n columns wide: c0..c(n-1), then c(n)..c(2n-1). */
export function imageColumns(n: number): string {
  let list = imageLists.get(n);
  if (list === undefined) {
    list = Array.from({ length: 2 * n }, (_, i) => journalColumn(i)).join(', ');
    imageLists.set(n, list);
  }
  return list;
}

/** imageColumns by width, made once (a follower names a table's journal columns for every batch). */
const imageLists = new Map<number, string>();

/**
 * The journal rows of one table in a seq range, as SQL to use as a
 * subquery (seq, op, ts, mask, c0..c(2n-1)), with the values its named parameters
 * are bound to. The bounds are bound, not written into the SQL, so every
 * batch of a projection runs the same (cached) statements. Readers outside
 * capture read it through feed/event-relation.ts.
 */
export interface JournalRange {
  readonly sql: string;
  readonly params: Readonly<Record<string, number>>;
}

/** The events of table `tid` (n columns wide) in (lo, hi] (seq order by rowid). */
export function journalRange(tid: number, n: number, lo: number, hi: number, masked = true): JournalRange {
  return {
    sql: `SELECT seq, op, ts, ${maskOrNull(masked)}, ${imageColumns(n)} FROM main.${JOURNAL_TABLE} WHERE tid = ${tid} AND seq > $lo AND seq <= $hi`,
    params: { lo, hi },
  };
}

/*
 * bumped_generation is the generation of the last bump (or of creation).
 * Every re-arm advances the generation too, but only a bump makes every
 * cursor rebuild: a re-armed table is told by its own armed_generation.
 * Format 1 had no such column; the upgrade adds it with exactly this text,
 * so a fresh state table and an upgraded one have the same DDL.
 */
export const BUMPED_COLUMN_DEF = 'bumped_generation INTEGER NOT NULL DEFAULT 0';

/*
 * `excluded`: the columns left out of capture (a JSON array of names, NULL
 * or absent: none). The first tables had no such column; the first enable
 * that leaves a column out adds it in place with exactly the text SQLite
 * appends, so a table made so and one made fresh have the same DDL, and no
 * format change is needed. `columns` holds the captured columns only: the
 * journal's images are in their order.
 */
export const TABLES_EXCLUDED_COLUMN_DEF = 'excluded TEXT';

/** The captured tables' DDL before `excluded` (recognised as ours; enable adds the column in place when it is first needed). */
export function legacyTablesDdl(): string {
  return (metadataDdl(0)[1] as string).replace(`\n, ${TABLES_EXCLUDED_COLUMN_DEF})`, '\n)');
}

/** The pending table's DDL in format 1 (no hw column): recognised as ours so that the upgrade can replace it. */
export function legacyPendingDdl(width: number): string {
  const cols = Array.from({ length: width }, (_, i) => `, ${journalColumn(i)}`).join('');
  return `CREATE TABLE ${PENDING_TABLE} (tid INTEGER NOT NULL, op INTEGER NOT NULL${cols})`;
}

/** The journal's DDL before format 3 (no mask column), `width` image columns wide. */
export function legacyJournalDdl(width: number): string {
  return (metadataDdl(width)[2] as string).replace(`, ${MASK_COLUMN}`, '');
}

/** The state table's DDL in format 1 (no bumped_generation). */
export function legacyStateDdl(): string {
  return (metadataDdl(0)[0] as string).replace(`\n, ${BUMPED_COLUMN_DEF})`, '\n)');
}

/**
 * The pending table's DDL, `width` image columns wide. It holds nothing
 * between statements, so it can be made again empty (the format-1
 * upgrade, and enable when it was dropped outside sluice).
 */
export function pendingDdl(width: number): string {
  const cols = Array.from({ length: width }, (_, i) => `, ${journalColumn(i)}`).join('');
  return `CREATE TABLE ${PENDING_TABLE} (tid INTEGER NOT NULL, op INTEGER NOT NULL, hw INTEGER NOT NULL${cols})`;
}

export function metadataDdl(width: number): string[] {
  const cols = Array.from({ length: width }, (_, i) => `, ${journalColumn(i)}`).join('');
  return [
    `CREATE TABLE ${STATE_TABLE} (
  id INTEGER PRIMARY KEY CHECK (id = 1),
  format INTEGER NOT NULL,
  source_id TEXT NOT NULL,
  generation INTEGER NOT NULL,
  retention INTEGER NOT NULL,
  pruned_through INTEGER NOT NULL DEFAULT 0,
  journal_width INTEGER NOT NULL,
  created_ms INTEGER NOT NULL,
  updated_ms INTEGER NOT NULL,
  last_reason TEXT
, ${BUMPED_COLUMN_DEF})`,
    `CREATE TABLE ${TABLES_TABLE} (
  tid INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  mode TEXT NOT NULL,
  columns TEXT NOT NULL,
  key_columns TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  armed_generation INTEGER NOT NULL,
  armed_seq INTEGER NOT NULL DEFAULT 0,
  insert_trigger TEXT NOT NULL,
  update_trigger TEXT NOT NULL,
  delete_trigger TEXT NOT NULL,
  before_insert_trigger TEXT,
  before_update_trigger TEXT
, ${TABLES_EXCLUDED_COLUMN_DEF})`,
    // ts is julianday('now') as REAL: the cheapest wall clock a trigger can
    // read; readers turn it into exact milliseconds.
    `CREATE TABLE ${JOURNAL_TABLE} (seq INTEGER PRIMARY KEY, tid INTEGER NOT NULL, op INTEGER NOT NULL, ts REAL NOT NULL, ${MASK_COLUMN}${cols})`,
    CONSUMERS_TABLE_SQL,
    pendingDdl(width),
    `CREATE TABLE ${LAST_TABLE} (tid INTEGER PRIMARY KEY, seq INTEGER NOT NULL)`,
    `CREATE TABLE ${SCHEMA_TABLE} (id INTEGER PRIMARY KEY CHECK (id = 1), before INTEGER NOT NULL, after INTEGER NOT NULL)`,
    ...tickDdl(),
  ];
}

/**
 * The journal's tick, in creation order (the prune trigger last): every
 * PRUNE_INTERVAL seqs, inside the writer's transaction, the events since
 * the checkpoint are folded into the tables' last seqs (LAST_TABLE) and
 * the journal is pruned. retention >= 1024, so the newest row is never
 * deleted and seq (max rowid + 1) never goes back. The state row is
 * rewritten only when pruned_through moves.
 */
/**
 * An inert view (format 5). A flush trigger that kept notes inserts the
 * table's tid and the kind of write (`op`) into it, and that table's
 * `INSTEAD OF` trigger on it (`_sluice_t<tid>_pfl`) journals them: the work of the flush sits behind
 * the view, out of the body of a trigger that fires on every insert (see
 * flushPending in triggers.ts). Made once, by the first arming that needs it.
 */
export const FLUSH_VIEW = '_sluice_flush';
export const FLUSH_VIEW_SQL = `CREATE VIEW ${FLUSH_VIEW} AS SELECT 0 AS tid, 0 AS op`;

/**
 * The tables and views a source's capture reads and writes, one of which
 * missing (dropped outside sluice) is a damaged capture (CAPTURE_DAMAGED,
 * which the CLI names when SQLite reports it). Not the state row's table,
 * without which a source has no capture at all (CAPTURE_ABSENT), nor the
 * alter log, which only a source that ran an alter has.
 */
export const CAPTURE_RELATIONS: readonly string[] = [
  ...OWN_TABLES.filter((t) => t !== STATE_TABLE && t !== DDL_TABLE),
  TICK_VIEW,
  MARK_VIEW,
  FLUSH_VIEW,
];

/** The SQL that makes FLUSH_VIEW unless it is there (never dropped and made again: its triggers would go with it). */
export const FLUSH_VIEW_IF_MISSING = FLUSH_VIEW_SQL.replace('CREATE VIEW', 'CREATE VIEW IF NOT EXISTS');

export function tickDdl(): string[] {
  return [
    TICK_VIEW_SQL,
    `CREATE TRIGGER ${TICK_TRIGGER} INSTEAD OF INSERT ON ${TICK_VIEW} BEGIN
  INSERT INTO ${LAST_TABLE} (tid, seq) SELECT tid, max(seq) FROM ${JOURNAL_TABLE} WHERE seq > NEW.seq - ${PRUNE_INTERVAL} GROUP BY tid ON CONFLICT (tid) DO UPDATE SET seq = max(seq, excluded.seq);
  UPDATE ${LAST_TABLE} SET seq = NEW.seq WHERE tid = ${LAST_CHECKPOINT_TID} AND seq < NEW.seq;
  DELETE FROM ${JOURNAL_TABLE} WHERE seq <= NEW.seq - (SELECT retention FROM ${STATE_TABLE});
  UPDATE ${STATE_TABLE} SET pruned_through = NEW.seq - retention WHERE NEW.seq - retention > pruned_through;
END`,
    `CREATE TRIGGER ${PRUNE_TRIGGER} AFTER INSERT ON ${JOURNAL_TABLE} WHEN NEW.seq % ${PRUNE_INTERVAL} = 0 BEGIN
  INSERT INTO ${TICK_VIEW} (seq) VALUES (NEW.seq);
END`,
  ];
}

/** The prune trigger of formats 2 and 3 (pruning only, its work in its own body; the tables' last seqs kept by the capture triggers). */
export const LEGACY_PRUNE_TRIGGER_SQL = `CREATE TRIGGER ${PRUNE_TRIGGER} AFTER INSERT ON ${JOURNAL_TABLE} WHEN NEW.seq % ${PRUNE_INTERVAL} = 0 AND NEW.seq - (SELECT retention FROM ${STATE_TABLE}) > (SELECT pruned_through FROM ${STATE_TABLE}) BEGIN
  DELETE FROM ${JOURNAL_TABLE} WHERE seq <= NEW.seq - (SELECT retention FROM ${STATE_TABLE});
  UPDATE ${STATE_TABLE} SET pruned_through = max(pruned_through, NEW.seq - retention);
END`;

/**
 * SQL for the checkpoint of LAST_TABLE: its row, or (no row: a format-3
 * source not upgraded yet, whose rows are exact) past every seq. A
 * format-4 source always has the row; were it missing, 0 would still be
 * exact (every event read), only slower.
 */
const LAST_CHECKPOINT_SQL = `coalesce((SELECT seq FROM main.${LAST_TABLE} WHERE tid = ${LAST_CHECKPOINT_TID}), (SELECT CASE WHEN format < 4 THEN 9223372036854775807 ELSE 0 END FROM main.${STATE_TABLE} WHERE id = 1))`;

/**
 * SQL for the last seq of the table whose tid is the expression `tid` (0
 * when it has none): its row of LAST_TABLE, or its newest event after the
 * checkpoint (at most PRUNE_INTERVAL - 1 events are read).
 */
export function lastSeqSql(tid: string): string {
  return `max(coalesce((SELECT l.seq FROM main.${LAST_TABLE} AS l WHERE l.tid = ${tid}), 0), coalesce((SELECT max(j.seq) FROM main.${JOURNAL_TABLE} AS j WHERE j.seq > ${LAST_CHECKPOINT_SQL} AND j.tid = ${tid}), 0))`;
}

/** Julian day (as stored in the journal) to Unix milliseconds. */
export function julianToMs(jd: number): number {
  return Math.round((jd - 2440587.5) * 86_400_000);
}
