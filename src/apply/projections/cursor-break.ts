import { reasonsOf, type ReasonCode } from '../../reasons.ts';
import type { SourceView } from '../../feed/index.ts';

/*
 * Whether a projection can be built from its source table as it is, and
 * what becomes of one whose cursor cannot continue: one rule, which sync's
 * step decides by (apply/sync/step-decision.ts) and health forecasts the
 * next sync by (apply/check/health.ts), so the two cannot disagree. Pure.
 */

/** The projection's source table in the source's capture, as far as building from it reads it. */
export interface CaptureFacts {
  readonly tracked: boolean;
  readonly armed: boolean;
  /** Why it is not armed. */
  readonly why?: string;
  /** Not armed until enable is told the columns to leave out (a column left out may have moved): those to name. */
  readonly exclude?: readonly string[];
  /** Its capture mode ('images', 'keys', ...). */
  readonly mode?: string;
}

/** How `view` (a source read in the caller's transaction) captures `table`. */
export function captureFacts(view: SourceView, table: string): CaptureFacts {
  const a = view.tables.get(table);
  if (a === undefined) return { tracked: false, armed: false };
  return {
    tracked: true,
    armed: a.armed,
    ...(a.reason === undefined ? {} : { why: a.reason }),
    ...(a.exclude === undefined ? {} : { exclude: a.exclude }),
    mode: a.table.mode,
  };
}

/** What whether a projection can be built from reads: its kind's needs and its source table's capture. */
export interface BuildableFacts {
  readonly projection: { readonly table: string; readonly needsImages: boolean };
  readonly table: CaptureFacts;
}

/** A suspension decided (not the stored one). */
export interface DecidedSuspension {
  readonly does: 'suspend';
  readonly reason: ReasonCode;
  readonly detail: Record<string, unknown>;
  readonly stored: false;
}

/** The columns a TABLE_UNARMED suspension's or cursor check's `detail` says enable must be told to leave out (its `exclude`), if it says so. */
export function excludeOf(detail: Readonly<Record<string, unknown>> | null | undefined): readonly string[] | undefined {
  const e = detail?.exclude;
  return Array.isArray(e) && e.every((c) => typeof c === 'string') ? (e as string[]) : undefined;
}

/** A cursor that cannot continue (feed/cursor-check.ts validateCursor's `rebuild`): its reason, message and, for TABLE_UNARMED, why. */
export interface BrokenCursor {
  readonly reason: ReasonCode;
  readonly message: string;
  readonly why?: string;
  readonly exclude?: readonly string[];
}

/** Rebuild reasons that a fresh snapshot repairs (kind `rebuilt` in src/reasons.ts); the others need the source fixed first. */
const REBUILDABLE: ReadonlySet<string> = reasonsOf('rebuilt');

/**
 * What sync does with a cursor that cannot continue: builds the projection
 * again from a snapshot for a reason a snapshot repairs (kind `rebuilt`),
 * when its table can be built from; else suspends it, for why the table
 * cannot be (a table switched to keys mode: NEEDS_IMAGES_MODE, though its
 * cursor says SCHEMA_CHANGED) or for the cursor's reason.
 */
export function cursorBreak(
  f: BuildableFacts,
  c: BrokenCursor,
): DecidedSuspension | { readonly does: 'rebuild'; readonly reason: ReasonCode } {
  if (REBUILDABLE.has(c.reason)) return unbuildable(f) ?? { does: 'rebuild', reason: c.reason };
  return decidedSuspension(c.reason, {
    table: f.projection.table,
    ...(c.why === undefined ? {} : { why: c.why }),
    ...(c.exclude === undefined ? {} : { exclude: c.exclude }),
    message: c.message,
  });
}

/** Why the projection's table cannot be built from now (a suspension), if it cannot. */
export function unbuildable(f: BuildableFacts): DecidedSuspension | undefined {
  const t = f.table;
  const table = f.projection.table;
  if (!t.tracked) return decidedSuspension('TABLE_UNTRACKED', { table });
  if (!t.armed)
    return decidedSuspension('TABLE_UNARMED', { table, why: t.why, ...(t.exclude === undefined ? {} : { exclude: t.exclude }) });
  if (lacksImages(f)) return decidedSuspension('NEEDS_IMAGES_MODE', { table, mode: t.mode });
  return undefined;
}

/** Whether the projection's kind is built and kept from row images, and its (captured) table is captured without them (keys or counter mode). */
export function lacksImages(f: BuildableFacts): boolean {
  return f.table.tracked && f.table.mode !== 'images' && f.projection.needsImages;
}

export function decidedSuspension(reason: ReasonCode, detail: Record<string, unknown>): DecidedSuspension {
  return { does: 'suspend', reason, detail, stored: false };
}
