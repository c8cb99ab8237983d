import type { Db } from '../../sqlite/index.ts';
import { cachedStatement, quoteIdent, withReadTransaction } from '../../sqlite/index.ts';
import { readSourceView, validateCursor, type SourceView } from '../../feed/index.ts';
import type { CompiledProjection } from '../../projection/index.ts';
import { kindOf } from '../../projection/index.ts';
import { columnsRead } from '../projections/index.ts';
import { journalMatches } from './step-facts.ts';

/*
 * A follower runs a pass per source commit, and a pass took a step, with its
 * own target write transaction, for every projection, also for those whose
 * source table the commit did not touch: the step found no event of their
 * table and committed their cursor at the new high-water mark. With five
 * tables written one at a time that was five transactions per commit where
 * one has anything to apply (bench/follow.ts: 5 tables cost 2.5x the CPU of
 * one per commit).
 *
 * Such a quiet projection can be left at its cursor instead: the target then
 * holds exactly what its last step committed, which is a state the source
 * passed through with nothing of that table after it, so a consumer of the
 * target sees the same rows. What the step would have checked is checked
 * here, without the write lock: the cursor against the source, in one read
 * transaction, as the step checks it (feed/cursor-check.ts: identity,
 * generation, the file, pruning, the schema, arming, the anchor of the
 * history), and the table's last seq (no event of it after the cursor). The
 * cursor still moves: a step runs when the projection was last stepped
 * longer than QUIET_MS ago, or when the source's journal went on more than a
 * sixteenth of its retention past the cursor (so pruning never reaches a
 * cursor left behind: it keeps at least the retention), or when another
 * program committed to the target since the last pass (a record this
 * syncer remembers may be stale then), or for anything unusual (a
 * suspension, a build, a definition changed, a re-arm): then every step runs
 * as before.
 */

/** A quiet projection is stepped at least this often (its cursor and acknowledgement move on). */
export const QUIET_MS = 1000;

/** What this syncer last left a projection at: its cursor, from its last step (active, nothing being built). */
export interface LeftAt {
  readonly cursor: string;
  readonly seq: number;
  readonly fingerprint: string;
  /** When its last step ran (ms since the epoch). */
  readonly steppedMs: number;
}

/** The target's data_version: moves when another connection commits to it (never for this connection's own commits). */
export function targetVersion(db: Db, schema: string): number {
  return Number(cachedStatement(db, `PRAGMA ${quoteIdent(schema)}.data_version`, 'pluck').get() as bigint);
}

/**
 * The projections of `ps` a pass can leave at their cursor (by name, with
 * the cursor and seq each stays at), and the source's high-water mark the
 * answer was read at. Read in one read transaction of the source; writes
 * nothing. A projection not in the answer gets its step.
 */
export function quietProjections(
  db: Db,
  ps: readonly CompiledProjection[],
  left: ReadonlyMap<string, LeftAt>,
  nowMs: number,
): { readonly quiet: ReadonlyMap<string, LeftAt>; readonly hw: number } | undefined {
  const candidates = ps.filter((p) => {
    const at = left.get(p.name);
    return at !== undefined && at.fingerprint === p.fingerprint && nowMs - at.steppedMs < QUIET_MS;
  });
  if (candidates.length === 0) return undefined;
  return withReadTransaction(db, () => {
    let view: SourceView;
    try {
      view = readSourceView(db);
    } catch {
      return undefined; // the steps say why
    }
    const quiet = new Map<string, LeftAt>();
    const behind = Math.max(1, Math.floor(view.state.retention / 16));
    for (const p of candidates) {
      const at = left.get(p.name) as LeftAt;
      const a = view.tables.get(p.source.table);
      if (a === undefined || !a.armed || a.table.lastSeq > at.seq || view.hw < at.seq || view.hw - at.seq >= behind) continue;
      if (!journalMatches(p, a.table)) continue;
      // As the step checks it (step-facts.ts cursorFacts), with nothing to prove across a window.
      const provable = kindOf(p).verification !== undefined;
      const v = validateCursor(db, at.cursor, view, {
        allowSchemaWindow: provable,
        acceptAlters: provable,
        reads: columnsRead(undefined, p),
        tables: [p.source.table],
      });
      if (v.status !== 'ok' || v.window === true || v.cursor.seq !== at.seq) continue;
      quiet.set(p.name, at);
    }
    return { quiet, hw: view.hw };
  });
}
