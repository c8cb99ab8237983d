import fs from 'node:fs';
import { openDatabase, type Db } from '../sqlite/connection.ts';
import { readProjections, repairAction, type ProjectionRecord } from './target-meta.ts';
import { readState, readTables } from '../capture/catalog.ts';
import { JOURNAL_TABLE, julianToMs } from '../capture/schema.ts';
import { InvalidInputError } from '../errors.ts';

export interface ProjectionHealth {
  readonly name: string;
  readonly kind: string;
  readonly state: string;
  readonly reason: string | null;
  readonly detail: unknown;
  readonly seq: number;
  readonly sourcePath: string | null;
  /** The source's high-water mark, when the source could be read. */
  readonly sourceSeq: number | null;
  /** Events of the projection's table not applied yet. */
  readonly lagEvents: number | null;
  /** How long the oldest unapplied event has waited (0 when caught up). */
  readonly lagMs: number | null;
  readonly lastError: string | null;
  readonly needsAction: boolean;
  /** What to do about it, when something needs action. */
  readonly action?: string;
}

export interface HealthReport {
  readonly ok: boolean;
  readonly projections: readonly ProjectionHealth[];
}

/**
 * Reports every projection of a target: state, lag in events and in ms
 * (read from its source), the last error, and whether it needs action.
 *
 * @example
 * const h = health('cache.db');
 * if (!h.ok) for (const p of h.projections.filter((x) => x.needsAction)) console.log(p.name, p.action);
 */
export function health(targetPath: string): HealthReport {
  if (!fs.existsSync(targetPath)) throw new InvalidInputError('DB_NOT_FOUND', `Target ${targetPath} does not exist. Pass a target written by \`sluice sync\`.`);
  const target = openDatabase(targetPath, { readonly: true, role: 'target' });
  const sources = new Map<string, Db | null>();
  try {
    const records = readProjections(target, 'main');
    const projections = records.map((r) => one(r, sourceFor(r, sources), targetPath));
    return { ok: projections.every((p) => !p.needsAction), projections };
  } finally {
    target.close();
    for (const s of sources.values()) s?.close();
  }
}

function sourceFor(r: ProjectionRecord, cache: Map<string, Db | null>): Db | null {
  if (r.sourcePath === null) return null;
  if (!cache.has(r.sourcePath)) {
    try {
      cache.set(r.sourcePath, openDatabase(r.sourcePath, { readonly: true, role: 'source' }));
    } catch {
      cache.set(r.sourcePath, null);
    }
  }
  return cache.get(r.sourcePath) ?? null;
}

function one(r: ProjectionRecord, source: Db | null, targetPath: string): ProjectionHealth {
  const base = {
    name: r.name,
    kind: r.kind,
    state: r.state,
    reason: r.reason,
    detail: r.detail === null ? null : (JSON.parse(r.detail) as unknown),
    seq: r.seq,
    sourcePath: r.sourcePath,
    lastError: r.lastError,
  };
  let sourceSeq: number | null = null;
  let lagEvents: number | null = null;
  let lagMs: number | null = null;
  let problem: string | undefined;
  if (source !== null) {
    source.exec('BEGIN');
    try {
      const state = readState(source);
      if (state === undefined) problem = `the source ${r.sourcePath} has no capture any more: run sluice enable on it, then sync`;
      else {
        const table = readTables(source).find((t) => t.name === r.sourceTable);
        const max = source.prepare(`SELECT max(seq) FROM main.${JOURNAL_TABLE}`).pluck().get() as bigint | null;
        sourceSeq = Math.max(Number(max ?? 0n), state.prunedThrough);
        if (state.sourceId !== r.sourceId) problem = `the source was re-created (new source id): the next sync rebuilds ${r.name} from a snapshot`;
        if (table !== undefined) {
          lagEvents = Number(source.prepare(`SELECT count(*) FROM main.${JOURNAL_TABLE} WHERE seq > ? AND tid = ?`).pluck().get(r.seq, table.tid) as bigint);
          const oldest = source.prepare(`SELECT ts FROM main.${JOURNAL_TABLE} WHERE seq > ? AND tid = ? ORDER BY seq LIMIT 1`).pluck().get(r.seq, table.tid) as number | undefined;
          lagMs = oldest === undefined ? 0 : Math.max(0, Date.now() - julianToMs(oldest));
        } else problem = `the source no longer captures ${r.sourceTable}`;
      }
    } finally {
      source.exec('ROLLBACK');
    }
  } else if (r.sourcePath !== null) problem = `the source ${r.sourcePath} cannot be opened`;
  let action: string | undefined;
  if (r.state === 'suspended') {
    action = repairAction(r.name, r.reason, r.sourcePath ?? undefined, targetPath);
  } else if (r.state === 'building') action = 'an initial build was interrupted: run sluice sync again';
  else if (r.lastError !== null) action = `the last sync failed: ${r.lastError}; fix it and run sluice sync again`;
  else if (problem !== undefined) action = problem;
  return { ...base, sourceSeq, lagEvents, lagMs, needsAction: action !== undefined, ...(action === undefined ? {} : { action }) };
}
