import type { CapturedTable } from '../../capture/index.ts';
import { foldIdent } from '../../sqlite/index.ts';
import { validateCursor, type CursorValidation, batchEnd } from '../../feed/index.ts';
import type { SourceView } from '../../feed/index.ts';
import { definitionFingerprint, type CompiledProjection, kindOf } from '../../projection/index.ts';
import type { ProjectionRecord } from '../target/index.ts';
import { shadowBuildOf } from '../target/index.ts';
import { classifyForSync } from '../evolution/index.ts';
import { captureFacts, columnsRead, excludeOf, suspensionGate, type ApplyTarget } from '../projections/index.ts';
import type { CursorFacts, RowFacts } from './step-decision.ts';

/*
 * The facts a step of sync decides from (step-decision.ts), read in the
 * step's target transaction: they write nothing. The row's first; the
 * definition's and the cursor's only when the row leaves the decision to
 * them (step.ts).
 */

/** Where a step stands: its target, its projection and the row the target holds for it, the source view read in its transaction. */
export interface StepPlace {
  readonly target: ApplyTarget;
  readonly p: CompiledProjection;
  readonly rec: ProjectionRecord | undefined;
  readonly view: SourceView;
  /** The step's request: a reinit, an explicit range, the bound of a batch. */
  readonly reinit: boolean;
  readonly range: { readonly fromSeq: number; readonly toSeq: number } | undefined;
  readonly batchSize: number;
}

/** What the stored row says, with the source table's capture from the source view. `build`: what resumeOrRollbackShadowBuild found. */
export function rowFacts(at: StepPlace, build: RowFacts['build']): RowFacts {
  const { target, p, rec, range } = at;
  const gate = rec === undefined ? undefined : suspensionGate(target, p, rec, range !== undefined);
  return {
    ...buildFacts(at),
    reinit: at.reinit,
    ...(range === undefined ? {} : { range }),
    ...(rec === undefined ? {} : { stored: { built: rec.cursor !== null, state: rec.state, reason: rec.reason } }),
    gate: gate === undefined ? 'open' : rec?.reason === 'TARGET_CONSTRAINT' ? 'waits' : 'stands',
    build,
  };
}

/** The projection's kind and its source table's capture (from the source view), for whether it can be built from. */
export function buildFacts(at: Pick<StepPlace, 'p' | 'view'>): Pick<RowFacts, 'projection' | 'table'> {
  const { p, view } = at;
  const a = view.tables.get(p.source.table);
  return {
    projection: { table: p.source.table, needsImages: kindOf(p).needsImages, shadow: shadowBuildOf(p) !== undefined },
    table: { ...captureFacts(view, p.source.table), columnsMatch: a !== undefined && journalMatches(p, a.table) },
  };
}

/** The definition's classification against the stored one, and the cursor checked against the source (`checked`: what that read). */
export function cursorFacts(at: StepPlace, rec: ProjectionRecord): { readonly facts: CursorFacts; readonly checked: CursorValidation } {
  const { target, p, view, range } = at;
  const db = target.db;
  const definition: CursorFacts['definition'] =
    rec.fingerprint === p.fingerprint ? 'same' : legacyFingerprint(p, rec) ? 'restamp' : classifyForSync(target, p, rec, view);
  // After DDL sluice did not make, a projection verify can check proves its continuity (the batch path); any other rebuilds (SCHEMA_WINDOW).
  const provable = kindOf(p).verification !== undefined && range === undefined;
  const v = validateCursor(db, rec.cursor ?? '', view, {
    allowSchemaWindow: provable,
    acceptAlters: provable,
    reads: columnsRead(undefined, p),
    // Its own table: a cursor an import or a subscriber wrote lists every table of the stream.
    tables: [p.source.table],
  });
  if (v.status === 'error') return { facts: { definition, cursor: { status: 'error', message: v.message } }, checked: v };
  if (v.status === 'rebuild') {
    const why = v.detail?.reason;
    const exclude = excludeOf(v.detail);
    return {
      facts: {
        definition,
        cursor: {
          status: 'rebuild',
          reason: v.reason,
          message: v.message,
          ...(typeof why === 'string' ? { why } : {}),
          ...(exclude === undefined ? {} : { exclude }),
        },
      },
      checked: v,
    };
  }
  const t = ownTable(v, p);
  const lo = v.cursor.seq;
  const window = v.window === true;
  return {
    facts: {
      definition,
      cursor: {
        status: 'ok',
        seq: lo,
        hw: v.view.hw,
        window,
        journalMatches: journalMatches(p, t),
        // (The proof compares the whole projection with the source at one seq: across a window, the backlog is one batch.)
        ...(range !== undefined || window ? {} : { nextEnd: batchEnd(db, t.tid, lo, v.view.hw, at.batchSize) }),
      },
    },
    checked: v,
  };
}

/** The projection's own source table among those of a cursor validated for it (validateCursor's `tables`). */
export function ownTable(v: Extract<CursorValidation, { status: 'ok' }>, p: CompiledProjection): CapturedTable {
  const t = v.tables.find((x) => foldIdent(x.name) === foldIdent(p.source.table));
  // (validateCursor answers ok only with it: a cursor that does not list it rebuilds.)
  if (t === undefined) throw new Error(`internal: the cursor of ${p.name} validated without its table ${p.source.table}`);
  return t;
}

/**
 * The set-based apply paths read a journal row's images by position, from
 * the columns the projection was compiled against. A projection compiled
 * before `sluice alter` changed its table in place (a `sync --follow`
 * started before it) would read the new layout with the old positions:
 * wrong values, or a spurious suspension. So the columns the table is armed
 * with must be the compiled ones.
 */
export function journalMatches(p: CompiledProjection, t: CapturedTable): boolean {
  const compiled = p.source.columns;
  return compiled.length === t.columns.length && compiled.every((c, i) => c.name === t.columns[i]);
}

/**
 * Whether `rec` was fingerprinted by an older scheme (the whole source
 * shape) for exactly this definition and shape: the same definition over
 * the same shape is the same projection (rows, keys, cursor), so only its
 * fingerprint is stamped anew.
 */
function legacyFingerprint(p: CompiledProjection, rec: ProjectionRecord): boolean {
  return rec.fingerprint === definitionFingerprint(p.definition, p.source, undefined) && rec.sourceShape === JSON.stringify(p.source);
}
