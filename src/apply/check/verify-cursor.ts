import type { Db } from '../../sqlite/index.ts';
import { reinitCommand } from '../../sqlite/index.ts';
import { validateCursor, type SourceView } from '../../feed/index.ts';
import { nextSyncArming, unarmedExclusion } from '../../capture/index.ts';
import { reasonsOf } from '../../reasons.ts';
import { columnsRead } from '../projections/index.ts';
import type { ProjectionRecord } from '../target/index.ts';
import type { ProjectionVerification } from './verify-types.ts';
import { unarmedOf, unarmedRepair } from './suspension-repair.ts';

/*
 * Whether a projection's cursor continues on the source, checked by verify
 * before it compares rows at that cursor, as sync's step checks it
 * (validateCursor with the options sync passes for a kind verify can check).
 * Rows compared at a cursor that does not continue (a source restored from
 * an older copy, a table re-armed after writes its triggers missed) differ
 * for reasons no hand edit of the target caused, and the next sync rebuilds
 * the projection by itself: verify says why, compares nothing and suspends
 * nothing.
 */

/** Why a cursor cannot continue that the next sync rebuilds from by itself (kind `rebuilt`). */
const SYNC_REBUILDS: ReadonlySet<string> = reasonsOf('rebuilt');

export type CursorVerdict =
  /** `window`: DDL sluice did not make ran since the cursor; sync goes on only when the rows match (SCHEMA_WINDOW otherwise). */
  | { readonly continues: true; readonly window: boolean }
  /** `repair`: what fixes it, where the catalog's repair of the reason does not say (a table not armed). */
  | { readonly continues: false; readonly reason: string; readonly skipped: string; readonly repair?: string };

/**
 * Checks the cursor of `rec` against the source `view` read in the caller's
 * transaction. `held` is the suspension verify compares it under
 * (TARGET_EDITED), which sync does not rebuild past.
 */
export function cursorVerdict(
  db: Db,
  rec: ProjectionRecord,
  view: SourceView,
  paths: { readonly source: string; readonly target: string },
  held: string | undefined,
): CursorVerdict {
  if (rec.cursor === null) return { continues: true, window: false };
  const v = validateCursor(db, rec.cursor, view, {
    allowSchemaWindow: true,
    acceptAlters: true,
    reads: columnsRead(rec),
    tables: [rec.sourceTable],
  });
  if (v.status === 'ok') return { continues: true, window: v.window === true };
  // A table not armed: the next sync re-arms it by itself, and rebuilds, unless the source must be fixed first.
  const unarmed = v.status === 'rebuild' && v.reason === 'TABLE_UNARMED' ? unarmedOf(v.detail, rec.sourceTable) : undefined;
  // Unarmed in this read: the next sync re-arms it, or it cannot ('armed' would be a re-arm committed since).
  const rearms = unarmed !== undefined && nextSyncArming(db, unarmed.table) !== 'unarmed';
  const then =
    held !== undefined
      ? `it stays suspended (${held}) until it is rebuilt: ${reinitCommand(rec.name, paths.source, paths.target)}`
      : SYNC_REBUILDS.has(v.reason)
        ? 'the next sluice sync rebuilds it by itself, then verify again'
        : rearms
          ? `the next sluice sync re-arms ${unarmed.table} on the source and rebuilds it by itself (CAPTURE_REARMED), then verify again`
          : 'the next sluice sync cannot rebuild it by itself: fix the source first';
  return {
    continues: false,
    reason: v.reason,
    skipped: `not compared: the cursor of ${rec.name} (seq ${rec.seq}) does not continue on the source (${v.reason}: ${v.message}), so its rows need not match the source's at it; ${then}`,
    ...(unarmed === undefined || held !== undefined
      ? {}
      : {
          repair: unarmedRepair(
            rec.name,
            unarmed.table,
            unarmed.why,
            rearms ? 'rearmed' : 'unarmed',
            paths,
            undefined,
            rearms ? undefined : unarmedExclusion(db, unarmed.table),
          ),
        }),
  };
}

/**
 * A comparison made across DDL sluice did not make (`window`): rows that
 * differ there are what the next sync finds too, and it rebuilds the
 * projection (SCHEMA_WINDOW) rather than blame a hand edit, so verify says
 * that and keeps the keys in its message, not as diffs (which suspend it).
 */
export function acrossWindow(v: ProjectionVerification, window: boolean): ProjectionVerification {
  if (!window || v.diffs.length === 0) return v;
  const keys = v.diffs.map((d) => `${d.kind} ${JSON.stringify(d.key)}`).join(', ');
  return {
    ...v,
    diffs: [],
    reason: 'SCHEMA_WINDOW',
    skipped: `DDL sluice did not make ran on the source since the cursor of ${v.name} (seq ${v.seq}), and its rows differ from the source's at it (${keys}): the next sluice sync rebuilds it by itself (SCHEMA_WINDOW), then verify again`,
  };
}
