import type { Db } from '../../sqlite/index.ts';
import { foldIdent, quoteIdent, writeTransaction, StoredRow, stringList } from '../../sqlite/index.ts';
import type { CaptureMode } from '../../capture/index.ts';
import { defaultProjectionName, defaultMirror, madeTables, type MirrorDefinition } from '../../projection/index.ts';
import type { ProjectionRecord } from '../target/index.ts';

/*
 * A target's projection set: the definitions stored one per row in
 * _sluice_projections, and "*", the member that stands for a mirror of every
 * captured images-mode table of the source (what `sluice sync SRC TGT`
 * without --projection builds). "*" is stored as itself, in
 * _sluice_projection_set, not as the mirrors it happened to make: each sync
 * that runs the set makes the mirror of a table enabled since. The mirrors
 * it made are ordinary rows of _sluice_projections, so one whose table is no
 * longer captured stays (suspended by sync, reported by health) until it is
 * dropped; a table whose mirror was dropped with `sluice drop` is left out
 * (`except`) until "*" is given again (`--projection '*'`).
 *
 * A target made before the set was stored has no such table. It counts as
 * built by the default when every projection it holds is a default mirror
 * of a source (what `sync` without --projection stored), and the next sync
 * stores "*" for it; any other counts as built from its definitions. A
 * target made since always has the table (empty: built from definitions).
 */

export const PROJECTION_SET_TABLE = '_sluice_projection_set';

/** The member of a projection set that mirrors every captured images-mode table; also what `--projection '*'` passes. */
export const MIRROR_ALL = '*';

/**
 * How "*" came into the set: `default` a plain sync on a new target, `given`
 * passed as `--projection '*'`, `upgraded` inferred from a target made before
 * the set was stored.
 */
const MIRROR_ALL_ORIGINS = ['default', 'given', 'upgraded'] as const;
export type MirrorAllOrigin = (typeof MIRROR_ALL_ORIGINS)[number];

export interface MirrorAll {
  readonly origin: MirrorAllOrigin;
  /** False when inferred from an older target's projections: the next sync stores it. */
  readonly stored: boolean;
  /** The source it mirrors (an absolute path as sync was given it), or null when not known. */
  readonly sourcePath: string | null;
  /** Tables whose mirror was dropped (`sluice drop`): "*" does not make them again. */
  readonly except: readonly string[];
}

export interface ProjectionSet {
  /** The target has the set table (false: made before it, or not a sync target yet). */
  readonly stored: boolean;
  /** "*", when the set holds it (or an older target counts as built by the default). */
  readonly mirrorAll: MirrorAll | undefined;
}

/** A captured table as "*" sees it: its name and capture mode. */
export interface CapturedTableMode {
  readonly name: string;
  readonly mode: CaptureMode;
}

/** A projection that holds a name, and the source table it reads (undefined: not known, a definition that did not parse). */
export interface NameHolder {
  readonly name: string;
  readonly table: string | undefined;
}

/** The names `projections` hold, folded as SQLite folds them. */
export function nameHolders(projections: Iterable<NameHolder>): Map<string, NameHolder> {
  const out = new Map<string, NameHolder>();
  for (const p of projections) out.set(foldIdent(p.name), p);
  return out;
}

/** A captured table "*" does not mirror, and why (a sync report says so). */
export interface Unmirrored {
  readonly table: string;
  readonly mode: CaptureMode;
  readonly why: string;
}

function hasSetTable(db: Db, schema: string): boolean {
  return (
    db.prepare(`SELECT 1 FROM ${quoteIdent(schema)}.sqlite_schema WHERE type = 'table' AND name = ?`).get(PROJECTION_SET_TABLE) !==
    undefined
  );
}

/** Whether a stored projection is a mirror exactly as `sync` without --projection makes it (under today's default name, or the table's own from before the escape). */
export function isDefaultMirror(r: Pick<ProjectionRecord, 'name' | 'kind' | 'sourceTable' | 'definition'>): boolean {
  if (r.kind !== 'mirror' || (r.name !== defaultProjectionName(r.sourceTable) && r.name !== r.sourceTable)) return false;
  let d: unknown;
  try {
    d = JSON.parse(r.definition);
  } catch {
    return false;
  }
  if (typeof d !== 'object' || d === null || Array.isArray(d)) return false;
  const o = d as Record<string, unknown>;
  const keys = Object.keys(o).sort().join(',');
  const target = keys === 'kind,name,source,target' && o.target === r.sourceTable;
  return (keys === 'kind,name,source' || target) && o.kind === 'mirror' && o.name === r.name && o.source === r.sourceTable;
}

/**
 * The target's projection set, read-only (health and verify read it too).
 * `records` are its stored projections (readProjections).
 */
export function readProjectionSet(db: Db, schema: string, records: readonly ProjectionRecord[]): ProjectionSet {
  if (hasSetTable(db, schema)) {
    const r = db
      .prepare(`SELECT origin, source_path, except_tables FROM ${quoteIdent(schema)}.${PROJECTION_SET_TABLE} WHERE member = ?`)
      .get(MIRROR_ALL) as Record<string, unknown> | undefined;
    if (r === undefined) return { stored: true, mirrorAll: undefined };
    const row = new StoredRow(db, { role: 'Target', schema, table: PROJECTION_SET_TABLE, row: MIRROR_ALL }, r);
    return {
      stored: true,
      mirrorAll: {
        origin: row.oneOf('origin', MIRROR_ALL_ORIGINS),
        stored: true,
        sourcePath: row.textOrNull('source_path'),
        except: row.json('except_tables', stringList, 'a JSON array of table names'),
      },
    };
  }
  // Rows made by sync name their source; import's and subscribe's do not, and they are not the default's.
  const fromSync = records.filter((r) => r.sourcePath !== null);
  const byDefault = records.length > 0 && fromSync.length === records.length && records.every(isDefaultMirror);
  if (!byDefault) return { stored: false, mirrorAll: undefined };
  return { stored: false, mirrorAll: { origin: 'upgraded', stored: false, sourcePath: fromSync[0]?.sourcePath ?? null, except: [] } };
}

/** What a run of a target fed by a stream (subscribe, import) is given: its definitions, whether "*" is among them, and its source when known. */
export interface StreamSet {
  /** The source whose stream it applies (undefined: not known before the stream is read, an import's file). */
  readonly sourceId?: string | undefined;
  readonly projections?: readonly unknown[] | undefined;
  /** `--projection '*'` (sluice.yml `projections: ["*"]`): a mirror of every table the stream carries, beside the definitions. */
  readonly mirrorAll?: boolean | undefined;
}

/**
 * "*" for a run of a target fed by a stream, the rule subscribe and import
 * share (as sync's plain run stores it): given (`mirrorAll`), else, with no
 * definitions given, the one the target's projection set stores, or the
 * default for a target with no projection (of `sourceId`, when known) yet
 * (a mirror of every table the stream carries, now and later), or for an
 * older such target, made before the set was stored, whose every
 * projection (of that source) is such a mirror with no source path.
 * Undefined: its definitions only. `records` are the target's
 * (readProjections).
 */
export function streamMirrorAll(db: Db, schema: string, records: readonly ProjectionRecord[], set: StreamSet): MirrorAll | undefined {
  if (set.mirrorAll === true) {
    const stored = readProjectionSet(db, schema, records).mirrorAll;
    // Given again, it stores itself again with its list of dropped tables cleared, as sync does.
    return { origin: 'given', stored: false, sourcePath: stored?.sourcePath ?? null, except: [] };
  }
  if (set.projections !== undefined && set.projections.length > 0) return undefined;
  const stored = readProjectionSet(db, schema, records);
  if (stored.mirrorAll !== undefined) return stored.mirrorAll;
  const mine = set.sourceId === undefined ? records : records.filter((r) => r.sourceId === set.sourceId);
  if (mine.length === 0) return records.length === 0 ? { origin: 'default', stored: false, sourcePath: null, except: [] } : undefined;
  if (!stored.stored && mine.every((r) => r.sourcePath === null && isDefaultMirror(r)))
    return { origin: 'upgraded', stored: false, sourcePath: null, except: [] };
  return undefined;
}

/**
 * The mirrors "*" adds to this run: one per captured images-mode table that
 * has none, in capture order, left out when `taken` (the names and target
 * tables of the other projections of the run and of the target) already
 * holds its name or its table. Tables it does not mirror are in `unmirrored`.
 */
export function mirrorsToAdd(
  tables: Iterable<CapturedTableMode>,
  records: readonly ProjectionRecord[],
  mirrorAll: MirrorAll,
  taken: { readonly names: ReadonlyMap<string, NameHolder>; readonly tables: ReadonlyMap<string, string> },
): { readonly mirrors: MirrorDefinition[]; readonly unmirrored: Unmirrored[] } {
  const mirrors: MirrorDefinition[] = [];
  const unmirrored: Unmirrored[] = [];
  const except = new Set(mirrorAll.except);
  for (const t of tables) {
    if (except.has(t.name)) continue;
    const d = defaultMirror(t.name);
    // Its mirror under the pre-escape name, or a projection of its name: its mirror, or a definition of it that took its place.
    if (records.some((r) => r.sourceTable === t.name && isDefaultMirror(r))) continue;
    const holder = taken.names.get(foldIdent(d.name));
    if (holder !== undefined && (holder.table === undefined || holder.table === t.name)) continue;
    if (holder !== undefined) {
      unmirrored.push({
        table: t.name,
        mode: t.mode,
        why: `projection ${holder.name}, of table ${holder.table}, has the name of its mirror`,
      });
      continue;
    }
    if (t.mode !== 'images') {
      unmirrored.push({ table: t.name, mode: t.mode, why: `captured in ${t.mode} mode: a mirror needs images mode (before-images)` });
      continue;
    }
    const writer = taken.tables.get(foldIdent(t.name));
    if (writer !== undefined) {
      unmirrored.push({ table: t.name, mode: t.mode, why: `projection ${writer} writes target table ${t.name}` });
      continue;
    }
    mirrors.push(d);
  }
  return { mirrors, unmirrored };
}

/**
 * The mirrors "*" asks for that the target does not hold yet (a table
 * enabled after the last sync, or a first sync that failed before making
 * them), given the tables the source captures: what health and verify
 * report as MIRROR_NOT_BUILT. Empty when the set does not hold "*".
 */
export function missingMirrors(
  target: Db,
  schema: string,
  records: readonly ProjectionRecord[],
  captured: Iterable<CapturedTableMode>,
): MirrorDefinition[] {
  const mirrorAll = readProjectionSet(target, schema, records).mirrorAll;
  if (mirrorAll === undefined) return [];
  const names = nameHolders(records.map((r) => ({ name: r.name, table: r.sourceTable })));
  return mirrorsToAdd(captured, records, mirrorAll, { names, tables: tablesMadeBy(records) }).mirrors;
}

/**
 * The mirrors "*" adds for `tables`, a stream's (a subscriber's snapshot,
 * which says no capture mode: each is taken as images mode), beside the
 * target's stored `records` and the run's `defined` projections.
 */
export function streamMirrors(
  records: readonly ProjectionRecord[],
  mirrorAll: MirrorAll,
  tables: readonly string[],
  defined: readonly { readonly name: string; readonly source: string }[],
): MirrorDefinition[] {
  const names = nameHolders([
    ...records.map((r) => ({ name: r.name, table: r.sourceTable })),
    ...defined.map((d) => ({ name: d.name, table: d.source })),
  ]);
  return mirrorsToAdd(
    tables.map((name) => ({ name, mode: 'images' as const })),
    records,
    mirrorAll,
    { names, tables: tablesMadeBy(records) },
  ).mirrors;
}

/** Each table the stored projections make in the target (folded), with the projection that makes it. */
function tablesMadeBy(records: readonly ProjectionRecord[]): Map<string, string> {
  const tables = new Map<string, string>();
  for (const r of records) for (const t of madeTables(r)) tables.set(foldIdent(t), r.name);
  return tables;
}

/** The source "*" mirrors, as stored (or as its projections name it on an older target); null when the set does not hold "*". */
export function mirrorAllSource(target: Db, schema: string, records: readonly ProjectionRecord[]): string | null {
  const mirrorAll = readProjectionSet(target, schema, records).mirrorAll;
  if (mirrorAll === undefined) return null;
  return mirrorAll.sourcePath ?? records.find((r) => r.sourcePath !== null)?.sourcePath ?? null;
}

/** What a sync stores in the set before its first run. */
export interface SetChange {
  /** Store "*" with this origin and the source path; one given (`--projection '*'`) again clears its `except`. */
  readonly mirrorAll?: MirrorAllOrigin;
  /** Null for a subscriber's target, which reads no source file. */
  readonly sourcePath: string | null;
}

function createSetTable(db: Db, schema: string): void {
  db.exec(
    `CREATE TABLE IF NOT EXISTS ${quoteIdent(schema)}.${PROJECTION_SET_TABLE} (member TEXT PRIMARY KEY, origin TEXT NOT NULL, source_path TEXT, except_tables TEXT NOT NULL DEFAULT '[]', created_ms INTEGER NOT NULL, updated_ms INTEGER NOT NULL)`,
  );
}

/** Makes the set table (empty: a target built from definitions) and stores `change`, in a transaction of its own. */
export async function storeProjectionSet(db: Db, schema: string, change: SetChange): Promise<void> {
  await writeTransaction(db, () => {
    createSetTable(db, schema);
    if (change.mirrorAll === undefined) return;
    const now = Date.now();
    db.prepare(
      `INSERT INTO ${quoteIdent(schema)}.${PROJECTION_SET_TABLE} (member, origin, source_path, except_tables, created_ms, updated_ms) VALUES (?, ?, ?, '[]', ?, ?)
       ON CONFLICT (member) DO UPDATE SET source_path = excluded.source_path, updated_ms = excluded.updated_ms,
         except_tables = CASE WHEN excluded.origin = 'given' THEN '[]' ELSE except_tables END`,
    ).run(MIRROR_ALL, change.mirrorAll, change.sourcePath, now, now);
  });
}

/**
 * Takes "*" out of the set (a pipeline file that no longer declares it, with
 * prune: true), in the caller's transaction: true when the set held it. An
 * older target counted as built by the default gets the set table, empty:
 * built from its definitions from now on.
 */
export function removeMirrorAll(db: Db, schema: string, records: readonly ProjectionRecord[]): boolean {
  if (readProjectionSet(db, schema, records).mirrorAll === undefined) return false;
  createSetTable(db, schema);
  db.prepare(`DELETE FROM ${quoteIdent(schema)}.${PROJECTION_SET_TABLE} WHERE member = ?`).run(MIRROR_ALL);
  return true;
}

/**
 * Leaves a table out of "*" (its mirror was dropped): in the caller's
 * transaction. True when the set holds "*" and the table was added to its
 * `except`. On an older target counted as built by the default, "*" is
 * stored first (`sourcePath` from the dropped row).
 */
export function excludeFromMirrorAll(db: Db, schema: string, records: readonly ProjectionRecord[], dropped: ProjectionRecord): boolean {
  if (!isDefaultMirror(dropped)) return false;
  const set = readProjectionSet(db, schema, records);
  if (set.mirrorAll === undefined) return false;
  const s = quoteIdent(schema);
  if (!set.mirrorAll.stored) {
    createSetTable(db, schema);
    db.prepare(
      `INSERT INTO ${s}.${PROJECTION_SET_TABLE} (member, origin, source_path, except_tables, created_ms, updated_ms) VALUES (?, 'upgraded', ?, '[]', ?, ?)`,
    ).run(MIRROR_ALL, dropped.sourcePath, Date.now(), Date.now());
  }
  const except = [...new Set([...set.mirrorAll.except, dropped.sourceTable])];
  db.prepare(`UPDATE ${s}.${PROJECTION_SET_TABLE} SET except_tables = ?, updated_ms = ? WHERE member = ?`).run(
    JSON.stringify(except),
    Date.now(),
    MIRROR_ALL,
  );
  return true;
}
