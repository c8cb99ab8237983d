import type { Db, SqlValue } from '../sqlite/index.ts';
import {
  cachedStatement,
  setOwn,
  foldIdent,
  fromDriver,
  fromJsonValue,
  lossyTextTest,
  quoteIdent,
  textFromDbBytes,
} from '../sqlite/index.ts';
import { decodeMask, type ColumnMask } from '../capture/index.ts';
import {
  decodedBatch,
  fullImageEvent,
  keyImageEvent,
  markReads,
  type ChangeBatch,
  type ChangeEvent,
  type EventOp,
  type EventRelation,
  type Row,
} from '../feed/index.ts';
import { eventsTable, OP, type SegmentTable } from './segment-wire.ts';

/*
 * A batch of an attached segment (segment-read.ts) as the applier's one
 * batch type (feed/change-batch.ts): its relation is the segment's events
 * table itself, read in SQL by the same set-based appliers as sync's
 * journal relation, with no copy; its pages decode the same rows (exact
 * TEXT bytes) for the appliers that work event by event.
 */

const col = (alias: string, name: string) => (alias === '' ? name : `${alias}.${name}`);

/**
 * Events of segment table `t` (attached as `schema`) in (lo, hi], for a
 * projection reading the table's `columns`. `keyed`: whether the check
 * found any keys-mode event of `t` (CheckedSegment.keyed); when it found
 * none, keysOnly needs no scan of the range.
 */
export function segmentBatch(
  db: Db,
  schema: string,
  t: SegmentTable | undefined,
  table: string,
  columns: readonly string[],
  lo: number,
  hi: number,
  keyed = true,
): ChangeBatch {
  if (t === undefined || t.events === 0) return decodedBatch(db, table, columns, [], lo, hi);
  const names = t.columns.map((c) => c.name);
  const ev = `${quoteIdent(schema)}.${eventsTable(t.tno)}`;
  const decode = () => new SegmentDecoder(db, ev, t);
  // A projection's stored shape in another column order than the segment's: decoded by name (the mask's bits are the segment's columns).
  if (names.length !== columns.length || names.some((n, i) => foldIdent(n) !== foldIdent(columns[i] as string))) {
    return decodedBatch(db, table, columns, decode().range(lo, hi, Number.MAX_SAFE_INTEGER), lo, hi);
  }
  const where = 'seq > $lo AND seq <= $hi';
  const params = { lo, hi };
  const b: ChangeBatch = {
    table,
    fromSeq: lo,
    toSeq: hi,
    relation: (): EventRelation => ({
      sql: `SELECT seq, op, ts, mask, ${[...names.map((_, i) => `b${i}`), ...names.map((_, i) => `a${i}`)].join(', ')} FROM ${ev} WHERE ${where}`,
      params,
      hasBefore: (a) => `${col(a, 'op')} <> ${OP.insert}`,
      hasAfter: (a) => `${col(a, 'op')} <> ${OP.delete}`,
      before: (a, i) => col(a, `b${i}`),
      after: (a, i) => col(a, `a${i}`),
      // Only an update's mask is checked (segment-check.ts) and read.
      mask: (a) => `CASE WHEN ${col(a, 'op')} = ${OP.update} THEN ${col(a, 'mask')} END`,
      writes: () => '1',
    }),
    *pages(size) {
      const d = decode();
      for (let from = lo; from < hi;) {
        const page = d.range(from, hi, size);
        if (page.length === 0) return;
        yield page;
        from = (page.at(-1) as ChangeEvent).seq;
      }
    },
    atMost: (limit) => b.count() <= limit,
    count: () => Number(cachedStatement(db, `SELECT count(*) FROM ${ev} WHERE ${where}`, 'pluck').get(params)),
    keysOnly: () =>
      keyed && cachedStatement(db, `SELECT 1 FROM ${ev} WHERE ${where} AND keys IS NOT NULL LIMIT 1`, 'pluck').get(params) !== undefined,
    lastTs() {
      const ts = cachedStatement(db, `SELECT ts FROM ${ev} WHERE ${where} ORDER BY seq DESC LIMIT 1`, 'pluck').get(params);
      return ts === undefined ? null : Number(ts);
    },
    after: (seq) => segmentBatch(db, schema, t, table, columns, Math.max(lo, seq), hi, keyed),
    writes: () => true,
    readingOnly: (wanted, signedZero) => markReads(b, columns, wanted, signedZero),
  };
  return b;
}

/**
 * Events of segment table `t`, read on `image` (a segment checked in memory,
 * its main: segment-read.ts) in (lo, hi], decoded and written into `db`'s
 * TEMP work table as a batch of decoded events (decodedBatch). An error
 * reading the image is `unreadable`'s (one naming the segment); the
 * target's own errors are left as they are.
 */
export function decodedSegmentBatch(
  db: Db,
  image: Db,
  t: SegmentTable | undefined,
  table: string,
  columns: readonly string[],
  lo: number,
  hi: number,
  unreadable: (err: unknown) => Error,
): ChangeBatch {
  let events: ChangeEvent[] = [];
  try {
    if (t !== undefined && t.events > 0)
      events = new SegmentDecoder(image, `main.${eventsTable(t.tno)}`, t).range(lo, hi, Number.MAX_SAFE_INTEGER);
  } catch (err) {
    throw unreadable(err);
  }
  return decodedBatch(db, table, columns, events, lo, hi);
}

/** Decodes rows of a segment's events table into events, keeping TEXT bytes exact. */
class SegmentDecoder {
  readonly #db: Db;
  readonly #ev: string;
  readonly #t: SegmentTable;
  readonly #names: string[];
  readonly #lossy: (v: unknown) => boolean;

  constructor(db: Db, ev: string, t: SegmentTable) {
    this.#db = db;
    this.#ev = ev;
    this.#t = t;
    this.#names = t.columns.map((c) => c.name);
    this.#lossy = lossyTextTest(db);
  }

  /** At most `limit` events in (lo, hi], in seq order. */
  range(lo: number, hi: number, limit: number): ChangeEvent[] {
    const n = this.#names.length;
    const list = [...this.#names.map((_, i) => `b${i}`), ...this.#names.map((_, i) => `a${i}`)].join(', ');
    const rows = cachedStatement(
      this.#db,
      `SELECT seq, op, ts, mask, keys, ${list} FROM ${this.#ev} WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?`,
      'raw',
    ).all(lo, hi, limit) as unknown[][];
    return rows.map((r) => this.#decode(r, n));
  }

  #decode(r: readonly unknown[], n: number): ChangeEvent {
    const seqBig = r[0] as bigint;
    const seq = Number(seqBig);
    const op = Number(r[1]);
    const ts = Number(r[2]);
    const table = this.#t.name;
    const cell = (j: number, name: string): SqlValue => {
      const v = r[5 + j];
      if (!this.#lossy(v)) return fromDriver(v ?? null);
      const bytes = this.#db.prepare(`SELECT CAST(${name} AS BLOB) FROM ${this.#ev} WHERE seq = ?`).pluck().get(seqBig) as Uint8Array;
      return textFromDbBytes(this.#db, bytes);
    };
    const image = (offset: number, prefix: string): Row => {
      const out: Record<string, SqlValue> = {};
      this.#names.forEach((c, i) => setOwn(out, c, cell(offset + i, `${prefix}${i}`)));
      return out;
    };
    const name: EventOp = op === OP.insert ? 'insert' : op === OP.delete ? 'delete' : 'update';
    const changed = name === 'update' ? decodeMask(r[3] as ColumnMask, this.#names) : undefined;
    if (r[4] !== null) {
      // A keys-mode event: its keys, and the row as the source held it when exported (or none).
      const k = JSON.parse(String(r[4])) as { key: unknown[]; beforeKey?: unknown[]; after: boolean };
      const key = k.key.map(fromJsonValue);
      const beforeKey = name === 'update' ? (k.beforeKey ?? k.key).map(fromJsonValue) : key;
      return keyImageEvent(name, seq, table, ts, key, beforeKey, () => (k.after ? image(n, 'a') : null), changed);
    }
    // An image's columns are b0, b1, ... before the change and a0, a1, ... after it.
    return fullImageEvent(name, seq, table, this.#t.keyColumns, ts, (side) => (side === 'before' ? image(0, 'b') : image(n, 'a')), changed);
  }
}
