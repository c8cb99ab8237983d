import type { Db } from '../sqlite/index.ts';
import { hasCapture, highWaterMark } from './catalog.ts';
import type { CaptureMode } from './schema.ts';
import { consumerTargets, readConsumers, type TargetState } from './consumers.ts';
import { verifyCapture, type UnarmedReason } from './arming.ts';
import { damagedCapture } from './damaged.ts';

export interface TableStatus {
  readonly name: string;
  readonly mode: CaptureMode;
  readonly keyColumns: readonly string[];
  /** Columns left out of capture (enable --exclude); empty when none. */
  readonly excluded: readonly string[];
  readonly lastSeq: number;
  readonly armed: boolean;
  readonly reason?: UnarmedReason;
  readonly detail?: string;
  /** Unarmed until enable is told the columns to leave out (a column left out may have moved): those to name in --exclude. */
  readonly exclude?: readonly string[];
  /** Held (with `exclude`) only by these columns, new since it was armed: naming each one, in --exclude (left out) or --include (captured), arms it again. */
  readonly newColumns?: readonly string[];
}

export interface ConsumerStatus {
  readonly name: string;
  readonly seq: number;
  /** Seqs between the consumer's acknowledged position and the high-water mark. */
  readonly lag: number;
  readonly updatedMs: number;
  /** For a sync's consumer (`<projection>@<target>`): its projection, kind (when recorded) and target; null for any other consumer. */
  readonly projection: string | null;
  readonly kind: string | null;
  readonly target: string | null;
  /** For a sync's consumer: where its projection is now (consumers.ts TargetState); null for any other consumer. */
  readonly targetState: TargetState | null;
}

export interface CaptureStatus {
  readonly enabled: boolean;
  readonly sourceId: string | null;
  readonly generation: number;
  /** The high-water mark: the highest seq ever assigned. */
  readonly seq: number;
  readonly prunedThrough: number;
  readonly retention: number;
  readonly journalRows: number;
  readonly lastReason: string | null;
  readonly problem?: string;
  readonly tables: readonly TableStatus[];
  readonly consumers: readonly ConsumerStatus[];
}

/**
 * Read-only report of the capture: identity, high-water mark, retention,
 * per table its mode, key, last seq and whether it is armed (and why not),
 * and per consumer its acknowledged position and, for a sync's, whether its
 * target still holds the projection (each target is read, read-only).
 * A table of the capture dropped outside sluice throws CAPTURE_DAMAGED.
 *
 * @example
 * const s = status(openDatabase('app.db', { readonly: true }));
 * s.tables.filter((t) => !t.armed); // tables readers must rebuild from
 */
export function status(db: Db): CaptureStatus {
  // A table of the capture dropped outside sluice (CAPTURE_DAMAGED): said with its repair, as every command says it.
  const damaged = hasCapture(db) ? damagedCapture(db) : undefined;
  if (damaged !== undefined) throw damaged;
  const v = verifyCapture(db);
  if (v.state === undefined) {
    return {
      enabled: false,
      sourceId: null,
      generation: 0,
      seq: 0,
      prunedThrough: 0,
      retention: 0,
      journalRows: 0,
      lastReason: null,
      problem: v.problem,
      tables: [],
      consumers: [],
    };
  }
  const seq = highWaterMark(db);
  const rows = db.prepare('SELECT count(*) AS n FROM main._sluice_journal').get() as { n: bigint };
  const acknowledged = readConsumers(db);
  const targets = consumerTargets(acknowledged);
  const consumers = acknowledged.map((c) => ({
    name: c.name,
    seq: c.seq,
    lag: Math.max(0, seq - c.seq),
    updatedMs: c.updatedMs,
    projection: c.projection,
    kind: c.kind,
    target: c.target,
    targetState: targets.get(c.name) ?? null,
  }));
  return {
    enabled: true,
    sourceId: v.state.sourceId,
    generation: v.state.generation,
    seq,
    prunedThrough: v.state.prunedThrough,
    retention: v.state.retention,
    journalRows: Number(rows.n),
    lastReason: v.state.lastReason,
    ...(v.problem === undefined ? {} : { problem: v.problem }),
    tables: v.tables.map((a) => ({
      name: a.table.name,
      mode: a.table.mode,
      keyColumns: a.table.keyColumns,
      excluded: a.table.excluded,
      lastSeq: a.table.lastSeq,
      armed: a.armed,
      ...(a.reason === undefined ? {} : { reason: a.reason, detail: a.detail }),
      ...(a.exclude === undefined ? {} : { exclude: a.exclude }),
      ...(a.newColumns === undefined ? {} : { newColumns: a.newColumns }),
    })),
    consumers,
  };
}
