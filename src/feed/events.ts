import type { Db } from '../sqlite/index.ts';
import { RawText, setOwn, fromDriver, toBindable, type SqlValue, lossyTextTest, textFromDbBytes, quoteIdent } from '../sqlite/index.ts';
import {
  journalHasMask,
  type CapturedTable,
  JOURNAL_TABLE,
  OP_DELETE,
  OP_INSERT,
  journalColumn,
  journalSelectList,
  julianToMs,
  decodeMask,
  type ColumnMask,
} from '../capture/index.ts';

/** A row image: column name to exact value. */
export type Row = Readonly<Record<string, SqlValue>>;

interface EventBase {
  readonly seq: number;
  readonly table: string;
  /** Primary-key values in key order: the row's key after the change (before it, for a delete). */
  readonly key: readonly SqlValue[];
  /** Wall-clock milliseconds when the writer's statement ran. */
  readonly ts: number;
  /**
   * `full`: before/after are the exact images (images mode).
   * `key`: keys mode; `after` is the row as it is now, re-read in the same
   * read transaction (null when it no longer exists), and `before` is null.
   */
  readonly image: 'full' | 'key';
}

export interface InsertEvent extends EventBase {
  readonly op: 'insert';
  readonly before: null;
  readonly after: Row | null;
}
export interface UpdateEvent extends EventBase {
  readonly op: 'update';
  readonly before: Row | null;
  readonly after: Row | null;
  /** The key before the update; differs from `key` for a key change. */
  readonly beforeKey: readonly SqlValue[];
  /**
   * The columns the write changed (by storage class and bytes), in table
   * order. Absent when not known, which means every column changed: events
   * journaled before capture format 3, or read from an older export.
   */
  readonly changed?: readonly string[];
}
export interface DeleteEvent extends EventBase {
  readonly op: 'delete';
  readonly before: Row | null;
  readonly after: null;
}

/** One captured change, discriminated on `op`. A key change is one update carrying both keys. */
export type ChangeEvent = InsertEvent | UpdateEvent | DeleteEvent;

/** What a change did, as events and files name it. */
export type EventOp = ChangeEvent['op'];

/**
 * An images-mode event from its decoded images: the one shape every decoder
 * of full images builds (the journal's, a segment's). `image` decodes the
 * row image of one side; only the sides the op has are decoded (an insert's
 * after, a delete's before, both for an update). `changed` is an update's
 * changed columns (undefined: not known).
 */
export function fullImageEvent(
  op: EventOp,
  seq: number,
  table: string,
  keyColumns: readonly string[],
  ts: number,
  image: (side: 'before' | 'after') => Row,
  changed: readonly string[] | undefined,
): ChangeEvent {
  const keyOf = (row: Row) => keyColumns.map((k) => row[k] ?? null);
  if (op === 'insert') {
    const after = image('after');
    return { op, seq, table, key: keyOf(after), ts, image: 'full', before: null, after };
  }
  const before = image('before');
  if (op === 'delete') return { op, seq, table, key: keyOf(before), ts, image: 'full', before, after: null };
  const after = image('after');
  return {
    op,
    seq,
    table,
    key: keyOf(after),
    beforeKey: keyOf(before),
    ts,
    image: 'full',
    before,
    after,
    ...(changed === undefined ? {} : { changed }),
  };
}

/**
 * A keys-mode event: its keys (`beforeKey` only for an update), and the row
 * as it is read now (the source's current row, or the row a segment carries),
 * none for a delete. The one shape every decoder of keys-mode events builds.
 */
export function keyImageEvent(
  op: EventOp,
  seq: number,
  table: string,
  ts: number,
  key: readonly SqlValue[],
  beforeKey: readonly SqlValue[],
  after: () => Row | null,
  changed: readonly string[] | undefined,
): ChangeEvent {
  if (op === 'insert') return { op, seq, table, key, ts, image: 'key', before: null, after: after() };
  if (op === 'delete') return { op, seq, table, key, ts, image: 'key', before: null, after: null };
  return {
    op,
    seq,
    table,
    key,
    beforeKey,
    ts,
    image: 'key',
    before: null,
    after: after(),
    ...(changed === undefined ? {} : { changed }),
  };
}

/** Decodes raw journal rows into events, keeping TEXT bytes exact. */
export class JournalDecoder {
  readonly #db: Db;
  readonly #byTid: ReadonlyMap<number, CapturedTable>;
  readonly #rereads = new Map<string, { get: (...a: unknown[]) => unknown }>();
  readonly #cellBytes: Map<number, { get: (seq: bigint) => unknown }> = new Map();
  readonly #lossy: (v: unknown) => boolean;

  constructor(db: Db, tables: readonly CapturedTable[]) {
    this.#db = db;
    this.#lossy = lossyTextTest(db);
    this.#byTid = new Map(tables.map((t) => [t.tid, t]));
  }

  tableOf(tid: number): CapturedTable | undefined {
    return this.#byTid.get(tid);
  }

  /** The columns to select for decode(), for journal rows of these tables: {@link journalSelectList}. */
  selectList(): string {
    let width = 0;
    for (const t of this.#byTid.values())
      width = Math.max(width, t.mode === 'images' ? 2 * t.columns.length : t.mode === 'keys' ? 2 * t.keyColumns.length : 0);
    return journalSelectList(width, journalHasMask(this.#db));
  }

  /** `raw` is [seq, tid, op, ts, mask, c0, c1, ...] as returned by a raw() statement of {@link selectList}. */
  decode(raw: readonly unknown[]): ChangeEvent {
    const seqBig = raw[0] as bigint;
    const seq = Number(seqBig);
    const t = this.#byTid.get(Number(raw[1]));
    if (t === undefined) throw new Error(`journal row ${seq} belongs to an unknown table id ${String(raw[1])}`);
    const op = Number(raw[2]);
    const ts = julianToMs(raw[3] as number);
    const cell = (i: number): SqlValue => {
      const v = raw[5 + i];
      if (this.#lossy(v)) return this.#exactCell(seqBig, i);
      return fromDriver(v ?? null);
    };
    const pick = (offset: number, names: readonly string[]): Row => {
      const out: Record<string, SqlValue> = {};
      names.forEach((n, i) => setOwn(out, n, cell(offset + i)));
      return out;
    };
    const name: EventOp = op === OP_INSERT ? 'insert' : op === OP_DELETE ? 'delete' : 'update';
    const changed = name === 'update' ? decodeMask(raw[4] as ColumnMask, t.columns) : undefined;
    if (t.mode === 'images') {
      // An insert's and a delete's one image come first; an update's after image follows its before image.
      const n = t.columns.length;
      return fullImageEvent(
        name,
        seq,
        t.name,
        t.keyColumns,
        ts,
        (side) => pick(side === 'after' && name === 'update' ? n : 0, t.columns),
        changed,
      );
    }
    // keys mode: re-read the current row by key, inside the caller's read transaction.
    const k = t.keyColumns.length;
    const keyAt = (offset: number) => t.keyColumns.map((_, i) => cell(offset + i));
    const key = keyAt(name === 'update' ? k : 0);
    return keyImageEvent(name, seq, t.name, ts, key, name === 'update' ? keyAt(0) : key, () => this.#current(t, key), changed);
  }

  #exactCell(seq: bigint, i: number): SqlValue {
    let stmt = this.#cellBytes.get(i);
    if (stmt === undefined) {
      const s = this.#db.prepare(`SELECT CAST(${journalColumn(i)} AS BLOB) AS b FROM main.${JOURNAL_TABLE} WHERE seq = ?`).pluck();
      stmt = { get: (q) => s.get(q) };
      this.#cellBytes.set(i, stmt);
    }
    const bytes = stmt.get(seq) as Uint8Array;
    return textFromDbBytes(this.#db, bytes);
  }

  #current(t: CapturedTable, key: readonly SqlValue[]): Row | null {
    return readRowByKey(this.#db, t, key, this.#rereads);
  }
}

/** Reads one row of a captured table by key, with exact TEXT bytes. */
export function readRowByKey(
  db: Db,
  t: CapturedTable,
  key: readonly SqlValue[],
  cache: Map<string, { get: (...a: unknown[]) => unknown }>,
): Row | null {
  // RawText keys are bound as their bytes and cast back to TEXT, so the statement depends on which keys are RawText.
  const shape = key.map((v) => (v instanceof RawText ? 'r' : 'v')).join('');
  // The key must match exactly (storage class and bytes). `=` alone goes through
  // the column's collation and numeric equality: the old key 'abc' of a NOCASE
  // column would find the row now keyed 'ABC', and 1 would find 1.0, so a key
  // that is gone would look present. The plain `=` still lets the key index serve.
  const where = t.keyColumns
    .map((k, i) => {
      const c = quoteIdent(k);
      const p = key[i] instanceof RawText ? 'CAST(? AS TEXT)' : '?';
      return `${c} = ${p} AND ${c} = ${p} COLLATE BINARY AND typeof(${c}) = typeof(${p})`;
    })
    .join(' AND ');
  const cacheKey = `${t.name}\u0000${shape}`;
  let stmt = cache.get(cacheKey);
  if (stmt === undefined) {
    const s = db.prepare(`SELECT ${t.columns.map(quoteIdent).join(', ')} FROM main.${quoteIdent(t.name)} WHERE ${where}`).raw();
    stmt = { get: (...a) => s.get(...a) };
    cache.set(cacheKey, stmt);
  }
  // Each key value fills its three placeholders.
  const bind = key.flatMap((v) => {
    const b = toBindable(v);
    return [b, b, b];
  });
  const raw = stmt.get(...bind) as unknown[] | undefined;
  if (raw === undefined) return null;
  const out: Record<string, SqlValue> = {};
  t.columns.forEach((c, i) => {
    const v = raw[i];
    if (lossyTextTest(db)(v)) {
      const b = db
        .prepare(`SELECT CAST(${quoteIdent(c)} AS BLOB) FROM main.${quoteIdent(t.name)} WHERE ${where}`)
        .pluck()
        .get(...bind) as Uint8Array;
      setOwn(out, c, textFromDbBytes(db, b));
    } else setOwn(out, c, fromDriver(v ?? null));
  });
  return out;
}
