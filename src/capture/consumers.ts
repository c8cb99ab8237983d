import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { Db, FileIdentity } from '../sqlite/index.ts';
import { schemaVersion, openDatabase, readQuietlySync, StoredRow } from '../sqlite/index.ts';
import { DROPPED_TABLE, PROJECTIONS_TABLE } from './target-guard.ts';
import { CONSUMERS_TABLE, CONSUMER_ADDED_COLUMNS } from './schema.ts';
import { hasCapture } from './catalog.ts';
import { recordOwnDdl } from './enable.ts';

/*
 * The consumers a source knows of: its acknowledgement rows. A sync names
 * its consumers `<projection>@<target's absolute real path>`; a projection
 * name never holds "@" (projection/name.ts), so the projection and the
 * target are read back from the name exactly, on rows an older sluice wrote
 * too. Since the consumers table gained them, a sync also records the
 * projection's kind and the identity of the target file it acknowledged
 * for (device, inode, birth time), so that a target deleted and made again
 * at the same path is told from the one that acknowledged.
 */

export interface ConsumerRow {
  readonly name: string;
  readonly cursor: string;
  readonly seq: number;
  readonly updatedMs: number;
  /** The projection's kind, when a sync that records it acknowledged. */
  readonly kind: string | null;
  /** The identity of the target file it acknowledged for, when recorded. */
  readonly targetFile: FileIdentity | null;
  /** For a sync's consumer: its projection and target (absolute real path); null for any other consumer. */
  readonly projection: string | null;
  readonly target: string | null;
}

/**
 * Where a sync consumer's projection is now: `present` (its target holds
 * it), `gone` (no file at the target path), `lost` (the file there does not
 * hold it: deleted and made again without it, or removed without `sluice
 * drop`), `dropped` (`sluice drop` removed it: the next sync of the target
 * forgets the acknowledgement), or `unknown` (the target cannot be read).
 */
export type TargetState = 'present' | 'gone' | 'lost' | 'dropped' | 'unknown';

const SYNC_CONSUMER = /^([A-Za-z0-9_][A-Za-z0-9_.-]*)@(.+)$/s;

/** The projection and target of a sync's consumer name (`<projection>@<absolute path>`), or undefined for another name. */
function parseConsumerName(name: string): { readonly projection: string; readonly target: string } | undefined {
  const m = SYNC_CONSUMER.exec(name);
  if (m === null || !path.isAbsolute(m[2] as string)) return undefined;
  return { projection: m[1] as string, target: m[2] as string };
}

/** The name a sync acknowledges projection `projection` of target `targetKey` (its absolute real path) under. */
export function syncConsumerName(projection: string, targetKey: string): string {
  return `${projection}@${targetKey}`;
}

function columnsOf(db: Db): Set<string> {
  return new Set(
    (db.prepare(`SELECT name FROM main.pragma_table_info(?)`).pluck().all(CONSUMERS_TABLE) as string[]).map((n) => n.toLowerCase()),
  );
}

/** Every acknowledgement row of the source (none when it has no capture), by name. */
export function readConsumers(db: Db): ConsumerRow[] {
  if (!hasCapture(db)) return [];
  const rows = db.prepare(`SELECT * FROM main.${CONSUMERS_TABLE} ORDER BY name`).all() as Record<string, unknown>[];
  return rows.map((r) => {
    const row = new StoredRow(db, { role: 'Source', schema: 'main', table: CONSUMERS_TABLE, row: String(r.name) }, r);
    const name = row.text('name');
    const parsed = parseConsumerName(name);
    return {
      name,
      cursor: row.text('cursor'),
      seq: row.whole('seq'),
      updatedMs: row.whole('updated_ms'),
      // Informational (what status shows, what tells a replaced target): one not read is as if not recorded.
      kind: typeof r.kind === 'string' ? r.kind : null,
      targetFile: storedFileIdentity(r.target_file),
      projection: parsed?.projection ?? null,
      target: parsed?.target ?? null,
    };
  });
}

const fileIdentitySchema = z.object({ dev: z.string(), ino: z.string(), birth: z.number() });

/** A stored target file identity (JSON), or null: none recorded, or not one this sluice reads. */
function storedFileIdentity(text: unknown): FileIdentity | null {
  if (typeof text !== 'string') return null;
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    return null;
  }
  const parsed = fileIdentitySchema.safeParse(json);
  return parsed.success ? parsed.data : null;
}

/**
 * Where each sync consumer's projection is now (by consumer name; other
 * consumers are left out), reading each target read-only, once, held so
 * that no -wal or -shm is left beside it.
 */
export function consumerTargets(rows: readonly ConsumerRow[]): Map<string, TargetState> {
  const out = new Map<string, TargetState>();
  const targets = new Map<string, { readonly held: Set<string>; readonly dropped: Set<string> } | 'gone' | 'unknown'>();
  for (const c of rows) {
    if (c.target === null || c.projection === null) continue;
    let t = targets.get(c.target);
    if (t === undefined) {
      t = readTarget(c.target);
      targets.set(c.target, t);
    }
    out.set(c.name, typeof t === 'string' ? t : t.held.has(c.projection) ? 'present' : t.dropped.has(c.projection) ? 'dropped' : 'lost');
  }
  return out;
}

function readTarget(file: string): { readonly held: Set<string>; readonly dropped: Set<string> } | 'gone' | 'unknown' {
  if (!fs.existsSync(file)) return 'gone';
  // Held while read (readQuietlySync): a reader of a WAL file would leave a -wal and -shm beside it.
  return readQuietlySync([file], () => readTargetHeld(file));
}

function readTargetHeld(file: string): { readonly held: Set<string>; readonly dropped: Set<string> } | 'unknown' {
  let db: Db | undefined;
  try {
    db = openDatabase(file, { readonly: true, role: 'target' });
    const tables = new Set(db.prepare("SELECT name FROM main.sqlite_schema WHERE type = 'table'").pluck().all() as string[]);
    const names = (table: string) =>
      new Set(tables.has(table) ? (db?.prepare(`SELECT name FROM main.${table}`).pluck().all() as string[]) : []);
    return { held: names(PROJECTIONS_TABLE), dropped: names(DROPPED_TABLE) };
  } catch {
    return 'unknown';
  } finally {
    db?.close();
  }
}

/**
 * Adds the columns an older sluice's consumers table lacks, in the caller's
 * write transaction, and records the DDL as sluice's own (_sluice_schema),
 * so that no reader takes it for a schema window. Once per source.
 */
export function upgradeConsumers(db: Db): void {
  if (!consumersNeedUpgrade(db)) return;
  const have = columnsOf(db);
  const missing = CONSUMER_ADDED_COLUMNS.filter(([name]) => !have.has(name));
  if (missing.length === 0) return;
  const before = schemaVersion(db);
  // The names as they are (plain identifiers): SQLite appends the text as written, and a fresh table's DDL has them bare.
  for (const [name, decl] of missing) db.exec(`ALTER TABLE main.${CONSUMERS_TABLE} ADD COLUMN ${name} ${decl}`);
  recordOwnDdl(db, before);
}

/** Whether the source's consumers table is an older sluice's, without the columns upgradeConsumers adds. */
export function consumersNeedUpgrade(db: Db): boolean {
  const have = columnsOf(db);
  return have.size > 0 && CONSUMER_ADDED_COLUMNS.some(([name]) => !have.has(name));
}

/** The real path of a target, as its consumers are named by (the path itself when it cannot be resolved). */
export function targetKey(file: string): string {
  try {
    return fs.realpathSync(file);
  } catch {
    return path.resolve(file);
  }
}
