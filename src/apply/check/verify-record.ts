import { openDatabase, type Db, cachedStatement, repairAction, writeTransactionSync } from '../../sqlite/index.ts';
import { compileProjection, type SourceShape, parseStoredDefinition, kindNamed } from '../../projection/index.ts';
import { PROJECTIONS_TABLE, clearUnguarded, readProjection, setState, type ProjectionRecord } from '../target/index.ts';
import type { ProjectionVerification } from './verify-types.ts';

/*
 * What verify writes (only this, and only when there is something to
 * write): a projection it found different from its source is suspended
 * with TARGET_EDITED, so that health says so too, not only verify's own exit
 * code; one suspended with TARGET_EDITED that it finds equal again (the edit
 * was undone) is made active, and the next sync goes on from its cursor.
 * An fts5 index with external content is also checked against its key
 * table here (FTS5's integrity-check, which needs a write transaction,
 * though it writes nothing): the per-key hashes compare only the key table.
 * Each row is changed only if it is still of the build and in the state
 * verify read, and, for what the comparison found, still at the cursor it
 * read. The index check reads the index as it is, so neither a cursor a
 * sync moved meanwhile nor a suspension another process made (a follower
 * that saw a hand edit) skips it; one suspended meanwhile is not ok either
 * way.
 */

export const EDITED = 'TARGET_EDITED';

/** Whether verify compares `rec` although it is suspended: the one suspension verify itself clears. */
export function comparedWhileSuspended(rec: ProjectionRecord): boolean {
  return rec.state === 'suspended' && rec.reason === EDITED;
}

/**
 * Stores what verify found (see above) in the target at `targetPath`; returns
 * the verifications as they stand after the index checks, with `suspended`
 * or `cleared` where a row was changed.
 */
export function recordVerdicts(
  targetPath: string,
  records: readonly ProjectionRecord[],
  found: readonly ProjectionVerification[],
  /** The source as the caller named it, for the repairs it says. */
  sourcePath?: string,
  /** The projections with a table marked unguarded (protect-guards.ts): a comparison clears their marks. */
  marked: ReadonlySet<string> = new Set(),
): ProjectionVerification[] {
  const out = [...found];
  const todo = records.flatMap((rec, i) => {
    const v = found[i];
    if (v === undefined) return [];
    const active = rec.state === 'active' && rec.lastError === null;
    if (!active && !comparedWhileSuspended(rec)) return [];
    // Found different: suspended (an edited one stays as it is).
    if (v.diffs.length > 0) return active ? [{ rec, v, i }] : [];
    // Found equal: an edited one is cleared, and an index is checked against its rows first.
    if (v.ok && (comparedWhileSuspended(rec) || kindNamed(rec.kind)?.verification?.ownCheck !== undefined)) return [{ rec, v, i }];
    return [];
  });
  const unmark = records.flatMap((rec, i) => (marked.has(rec.name) ? [{ rec, i }] : []));
  if (todo.length === 0 && unmark.length === 0) return out;
  const db = openDatabase(targetPath, { role: 'target' });
  try {
    writeTransactionSync(db, () => {
      // The write lock first, so that what follows reads the rows as they are.
      cachedStatement(db, `UPDATE main.${PROJECTIONS_TABLE} SET name = name WHERE 0`).run();
      for (const { rec, v, i } of todo) {
        const stored = readProjection(db, 'main', rec.name);
        // Dropped or redefined since: not the projection verify compared.
        if (stored === undefined || stored.definition !== rec.definition) continue;
        // The index is checked as it is now, whatever the cursor or the state did since the comparison: a
        // follower that moved the cursor has not made a hand-edited index right, and one that suspended
        // it (it saw the edit) has not either. What the comparison found at the cursor it read is
        // stored only while the cursor and the state are still as verify read them.
        const own = v.ok ? ownCheckOf(db, 'main', rec) : undefined;
        if (!sameState(stored, rec)) {
          out[i] = own === false ? indexEdited(v, rec, stored.seq) : (suspendedMeanwhile(v, rec, stored, targetPath, sourcePath) ?? v);
          continue;
        }
        if (stored.seq !== rec.seq && own !== false) continue;
        if (own === false) out[i] = indexEdited(v, rec, stored.seq);
        else if (own === undefined && comparedWhileSuspended(rec) && beyondRows(rec))
          out[i] = {
            ...v,
            ok: false,
            reason: EDITED,
            skipped:
              rec.kind === 'custom'
                ? `another program wrote a table of custom projection ${rec.name}, whose state sluice cannot compare with the source: only a rebuild makes it the source's again: sluice reinit`
                : `another program wrote ${rec.targetTable}'s index, which keeps no values to compare (a contentless FTS5 index): only a rebuild makes it the source's again: sluice reinit`,
          };
        const now = out[i] as ProjectionVerification;
        if (!now.ok && rec.state === 'active' && now.sourceAffinity !== undefined) {
          // Not a hand edit: the source holds values no copy can keep as they are (source-affinity.ts).
          setState(db, 'main', rec.name, 'suspended', 'SOURCE_AFFINITY', { ...now.sourceAffinity, diffs: now.diffs });
          out[i] = { ...now, suspended: true };
        } else if (!now.ok && rec.state === 'active') {
          const rows = kindNamed(rec.kind)?.rowTable(rec.targetTable);
          setState(db, 'main', rec.name, 'suspended', EDITED, {
            table: rec.targetTable,
            source: rec.sourceTable,
            tables: own === false || rows === undefined ? [rec.targetTable] : [rows],
            ...(now.diffs.length > 0 ? { diffs: now.diffs } : {}),
            message: `sluice verify found ${rec.name} different from its source at its cursor (seq ${now.seq})${now.diffs.length > 0 ? `: ${now.diffs.map((d) => `${d.kind} ${JSON.stringify(d.key)}`).join(', ')}` : `: ${now.skipped ?? ''}`}.`,
          });
          out[i] = { ...now, suspended: true };
        } else if (now.ok && comparedWhileSuspended(rec)) {
          setState(db, 'main', rec.name, 'active', null, null);
          out[i] = { ...now, cleared: true };
        }
      }
      // A table marked unguarded (writes outside sluice may have gone in): its projection compared equal, or
      // suspended for the difference (TARGET_EDITED, whose repair rebuilds it), so the mark has done its work.
      for (const { rec, i } of unmark) {
        const stored = readProjection(db, 'main', rec.name);
        const now = out[i];
        if (stored === undefined || stored.definition !== rec.definition || now === undefined) continue;
        // A custom projection's "ok" compared nothing (NOT_VERIFIABLE): its mark stays until a rebuild makes its tables anew.
        const compared = now.ok && now.reason !== 'NOT_VERIFIABLE';
        if (compared || (stored.state === 'suspended' && stored.reason === EDITED)) clearUnguarded(db, 'main', rec.name);
      }
    });
  } finally {
    db.close();
  }
  return out;
}

/** Whether the projection's row is still in the state verify compared it in: nothing suspended or cleared it (a sync may have moved its cursor since). */
function sameState(now: ProjectionRecord, rec: ProjectionRecord): boolean {
  return now.state === rec.state && now.reason === rec.reason;
}

/** An fts5 index whose integrity-check failed: not ok, whatever its rows compared as. */
function indexEdited(v: ProjectionVerification, rec: ProjectionRecord, seq: number): ProjectionVerification {
  return {
    ...v,
    seq,
    ok: false,
    reason: EDITED,
    skipped: `its index ${rec.targetTable} no longer holds exactly the entries of its rows (FTS5 integrity-check): it was changed outside sluice; rebuild it with sluice reinit`,
  };
}

/**
 * A projection another process (a follower that saw a hand edit) suspended
 * while verify compared it: not ok, as health says, with its repair; what
 * verify found equal was so only as it read it. Undefined when verify
 * found it not ok itself, or it is not suspended now (another verify
 * cleared it).
 */
function suspendedMeanwhile(
  v: ProjectionVerification,
  rec: ProjectionRecord,
  now: ProjectionRecord,
  targetPath: string,
  sourcePath: string | undefined,
): ProjectionVerification | undefined {
  if (!v.ok || now.state !== 'suspended') return undefined;
  const repair = repairAction(rec.name, now.reason, sourcePath ?? now.sourcePath ?? undefined, targetPath, rec.sourceTable);
  return {
    ...v,
    seq: now.seq,
    ok: false,
    reason: now.reason ?? 'SUSPENDED',
    skipped: `${rec.name} was suspended (${now.reason ?? 'no reason recorded'}) by another process while verify compared it (as sluice health says), so what verify found is not what it holds now`,
    repair,
  };
}

/** Whether the stored TARGET_EDITED says another program wrote tables of it besides the one holding its rows. */
function beyondRows(rec: ProjectionRecord): boolean {
  const rows = kindNamed(rec.kind)?.rowTable(rec.targetTable);
  const tables = rec.detail?.tables;
  return (
    !Array.isArray(tables) || tables.some((t) => typeof t !== 'string' || rows === undefined || t.toLowerCase() !== rows.toLowerCase())
  );
}

/**
 * The kind's own check of a stored projection's tables in `schema` (an fts5
 * index against its key table), in the caller's write transaction: see
 * KindVerification.ownCheck. Undefined for a kind without one.
 */
export function ownCheckOf(db: Db, schema: string, rec: ProjectionRecord): boolean | undefined {
  const check = kindNamed(rec.kind)?.verification?.ownCheck;
  if (check === undefined) return undefined;
  const p = compileProjection(
    parseStoredDefinition(rec.definition, `stored definition of ${rec.name}`),
    JSON.parse(rec.sourceShape) as SourceShape,
  );
  return (check as (db: Db, schema: string, p: unknown) => boolean | undefined)(db, schema, p);
}
