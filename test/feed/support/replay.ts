/*
 * A consumer model for feed tests: rows keyed by their exact key, built from
 * a snapshot and then from replayed events, compared with the source byte
 * for byte (storage class + bytes, never through collation or affinity).
 */
import type { Db } from '../../../src/sqlite/index.ts';
import { RawText, type SqlValue, quoteIdent } from '../../../src/sqlite/index.ts';
import type { CapturedTable } from '../../../src/capture/index.ts';
import type { ChangeEvent, Row } from '../../../src/feed/index.ts';
import { readBatch, type Batch } from '../../../src/feed/index.ts';

/** A value as `class:hex-of-bytes` (REAL as its 8 IEEE bytes), so equal means byte-equal. */
export function canon(v: SqlValue): string {
  if (v === null) return 'n';
  if (typeof v === 'bigint') return `i:${v.toString()}`;
  if (typeof v === 'number') {
    const b = Buffer.alloc(8);
    b.writeDoubleBE(v);
    return `r:${b.toString('hex')}`;
  }
  if (typeof v === 'string') return `t:${Buffer.from(v, 'utf8').toString('hex')}`;
  if (v instanceof RawText) return `t:${Buffer.from(v.bytes).toString('hex')}`;
  return `b:${Buffer.from(v).toString('hex')}`;
}

export function canonKey(values: readonly SqlValue[]): string {
  return values.map(canon).join('|');
}

/**
 * Every row of `table` as key -> row, read through SQL with typeof() and
 * CAST(... AS BLOB), so TEXT is compared as stored bytes (malformed UTF-8
 * included) and REAL as its exact double.
 */
export function sourceRows(db: Db, table: string, columns: readonly string[], keyColumns: readonly string[]): Map<string, string> {
  const parts = columns.flatMap((c) => {
    const q = quoteIdent(c);
    return [
      `typeof(${q})`,
      `CASE WHEN typeof(${q}) IN ('text','blob') THEN CAST(${q} AS BLOB) END`,
      `CASE WHEN typeof(${q}) IN ('integer','real') THEN ${q} END`,
    ];
  });
  const rows = db
    .prepare(`SELECT ${parts.join(', ')} FROM main.${quoteIdent(table)}`)
    .raw()
    .all() as unknown[][];
  const out = new Map<string, string>();
  for (const r of rows) {
    const values = columns.map((_, i): string => {
      const type = r[3 * i] as string;
      const bytes = r[3 * i + 1] as Buffer | null;
      const num = r[3 * i + 2];
      switch (type) {
        case 'null':
          return 'n';
        case 'integer':
          return `i:${(num as bigint).toString()}`;
        case 'real': {
          const b = Buffer.alloc(8);
          b.writeDoubleBE(num as number);
          return `r:${b.toString('hex')}`;
        }
        case 'text':
          return `t:${(bytes as Buffer).toString('hex')}`;
        default:
          return `b:${(bytes as Buffer).toString('hex')}`;
      }
    });
    const key = keyColumns.map((k) => values[columns.indexOf(k)] as string).join('|');
    if (out.has(key)) throw new Error(`duplicate key ${key} in ${table}`);
    out.set(key, values.join(','));
  }
  return out;
}

function rowCanon(columns: readonly string[], row: Row): string {
  return columns
    .map((c) => {
      if (!(c in row)) throw new Error(`event row lacks column ${c}`);
      return canon(row[c] as SqlValue);
    })
    .join(',');
}

/** What a consumer holds: per table, key -> canonical row. */
export class ReplayModel {
  readonly tables = new Map<string, { columns: readonly string[]; keyColumns: readonly string[]; rows: Map<string, string> }>();
  /** Every seq applied, in order, to prove none is applied twice. */
  readonly seqs: number[] = [];

  reset(): void {
    this.tables.clear();
    this.seqs.length = 0;
  }

  table(t: { readonly name: string; readonly columns: readonly string[]; readonly keyColumns: readonly string[] }) {
    let m = this.tables.get(t.name);
    if (m === undefined) {
      m = { columns: t.columns, keyColumns: t.keyColumns, rows: new Map() };
      this.tables.set(t.name, m);
    }
    return m;
  }

  /** A snapshot row, values in `t.columns` order. */
  snapshotRow(t: CapturedTable, row: readonly SqlValue[]): void {
    const m = this.table(t);
    const key = canonKey(t.keyColumns.map((k) => row[t.columns.indexOf(k)] as SqlValue));
    if (m.rows.has(key)) throw new Error(`snapshot delivered key ${key} of ${t.name} twice`);
    m.rows.set(key, row.map(canon).join(','));
  }

  /**
   * Applies one event. Full-image events are checked against the model first,
   * as a target applier would: an insert must find no row at its key, an
   * update or delete must find exactly its before-image. An event applied
   * twice, or one missed before it, fails here instead of healing silently.
   */
  apply(e: ChangeEvent): void {
    const last = this.seqs.at(-1);
    if (last !== undefined && e.seq <= last) throw new Error(`event seq ${e.seq} after ${last}: not strictly increasing`);
    this.seqs.push(e.seq);
    const m = this.tables.get(e.table);
    if (m === undefined) throw new Error(`event for ${e.table}, which the model has no snapshot of`);
    const key = canonKey(e.key);
    if (e.image === 'full') {
      const at = e.op === 'update' ? canonKey(e.beforeKey) : key;
      const have = m.rows.get(at);
      if (e.op === 'insert' && have !== undefined)
        throw new Error(`seq ${e.seq}: insert of ${e.table} ${key}, which the model already holds (${have})`);
      if (e.op !== 'insert') {
        const before = rowCanon(m.columns, e.before as Row);
        if (have !== before)
          throw new Error(`seq ${e.seq}: ${e.op} of ${e.table} ${at}: before-image ${before}, model holds ${have ?? 'nothing'}`);
      }
      if (e.op === 'update' && at !== key && m.rows.has(key))
        throw new Error(`seq ${e.seq}: key change of ${e.table} onto ${key}, which the model already holds`);
    }
    if (e.op === 'delete') {
      m.rows.delete(key);
      return;
    }
    if (e.op === 'update') m.rows.delete(canonKey(e.beforeKey));
    // keys mode: after is the row as it is now, null when it is gone since.
    if (e.after === null) m.rows.delete(key);
    else m.rows.set(key, rowCanon(m.columns, e.after));
  }

  /** Reads batches from `cursor` until caught up; returns the last cursor and the batches read. */
  catchUp(db: Db, cursor: string, limit: number | (() => number)): { cursor: string; batches: Batch[] } {
    const batches: Batch[] = [];
    let at = cursor;
    for (;;) {
      const b = readBatch(db, at, { limit: typeof limit === 'number' ? limit : limit() });
      batches.push(b);
      for (const e of b.events) this.apply(e);
      at = b.to;
      if (!b.hasMore) return { cursor: at, batches };
    }
  }

  /** Differences between the model and the source, as readable lines (empty when equal). */
  diff(db: Db): string[] {
    const out: string[] = [];
    for (const [name, m] of this.tables) {
      const src = sourceRows(db, name, m.columns, m.keyColumns);
      for (const [k, v] of src) {
        const mine = m.rows.get(k);
        if (mine === undefined) out.push(`${name}: missing ${k} = ${v}`);
        else if (mine !== v) out.push(`${name}: ${k} is ${mine}, source has ${v}`);
      }
      for (const [k, v] of m.rows) if (!src.has(k)) out.push(`${name}: extra ${k} = ${v}`);
    }
    return out;
  }
}
