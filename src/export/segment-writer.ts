import fs from 'node:fs';
import type { Statement } from 'better-sqlite3';
import type { Db, SqlValue, TextEncoding } from '../sqlite/index.ts';
import {
  openDatabase,
  closeDatabase,
  beginHeld,
  commitHeld,
  placeholderFor,
  toBindable,
  toJsonValue,
  describeTable,
  textEncoding,
  connectionState,
  schemaVersion,
  slot,
} from '../sqlite/index.ts';
import { InvalidInputError } from '../errors.ts';
import { encodeMask, readTables } from '../capture/index.ts';
import { snapshot, storable, type Batch, type ChangeEvent, type Row } from '../feed/index.ts';
import { sourceShape, type SourceShape } from '../projection/index.ts';
import {
  BATCHES_DDL,
  BATCHES_TABLE,
  eventsDdl,
  eventsTable,
  META_DDL,
  META_TABLE,
  OP,
  rowsDdl,
  rowsTable,
  SEGMENT_APP_ID,
  SEGMENT_WIRE_VERSION,
  segmentDigest,
  segmentDigestOfBytes,
  metaPages,
  frameDigest,
  TABLES_DDL,
  TABLES_TABLE,
  type SegmentTable,
} from './segment-wire.ts';

/*
 * Writes a segment (wire.ts): into `<file>.tmp`, then digested, synced and
 * renamed over `file`, so a segment is either whole or absent. Values are
 * bound exactly (TEXT that is not valid UTF-8 as its bytes), in a file made
 * in the source's text encoding.
 */

interface Open {
  readonly t: SegmentTable;
  rows: number | null;
  events: number;
  insertRow?: Statement;
}

export interface SegmentSummary {
  readonly file: string;
  readonly bytes: number;
  readonly events: number;
  readonly rows: number;
  readonly batches: number;
  /** The cursor to continue from (the last batch's, else the snapshot's). */
  readonly cursor: string | undefined;
  readonly digest: string;
}

export class SegmentWriter {
  readonly #file: string;
  readonly #tmp: string;
  readonly #db: Db;
  readonly #source: Db;
  readonly #sourceId: string;
  readonly #tables = new Map<string, Open>();
  #events = 0;
  #rows = 0;
  #batches = 0;
  #fromSeq: number | undefined;
  #toSeq: number | undefined;
  #cursor: string | undefined;
  #snapshot: { seq: number; cursor: string } | undefined;
  /** Shapes of the source's captured tables, read once. */
  #captured: ReadonlyMap<string, SourceShape> | undefined;

  /**
   * A new segment of `source` (sluice's connection to it, read only), to be
   * renamed to `file` (or the name finish() is given); with `file` null, made
   * in memory and handed over as bytes by finishInMemory (a broker's message:
   * no file is written).
   */
  constructor(source: Db, sourceId: string, file: string | null, options: { readonly pageSize?: number } = {}) {
    this.#file = file ?? '';
    this.#tmp = file === null ? '' : `${file}.tmp`;
    this.#source = source;
    this.#sourceId = sourceId;
    if (file !== null) fs.rmSync(this.#tmp, { force: true });
    this.#db = openDatabase(file === null ? ':memory:' : this.#tmp, { create: true, role: 'segment' });
    const encoding: TextEncoding = textEncoding(source);
    this.#db.pragma(`encoding = '${encoding}'`);
    if (options.pageSize !== undefined) this.#db.pragma(`page_size = ${options.pageSize}`);
    this.#db.pragma('auto_vacuum = NONE');
    this.#db.pragma('journal_mode = OFF');
    this.#db.pragma('synchronous = OFF');
    this.#db.pragma(`application_id = ${SEGMENT_APP_ID}`);
    this.#db.pragma(`user_version = ${SEGMENT_WIRE_VERSION}`);
    // A private file nobody else opens: one write transaction, committed by finish(), its tables made in it too (each
    // made alone was a write of the file, a good part of a broker message's few events: segment-message.ts).
    beginHeld(this.#db, 'immediate');
    this.#db.exec(`${META_DDL}; ${TABLES_DDL}; ${BATCHES_DDL}`);
  }

  #table(name: string, shape?: SourceShape): Open {
    let o = this.#tables.get(name);
    if (o !== undefined) return o;
    const s = shape ?? this.#shapeOf(name);
    const t: SegmentTable = {
      tno: this.#tables.size + 1,
      name,
      columns: s.columns.map((c) => ({
        name: c.name,
        type: c.type,
        collate: c.collate,
        ...(c.anyNumeric === true ? { anyNumeric: true as const } : {}),
      })),
      keyColumns: [...s.keyColumns],
      withoutRowid: s.withoutRowid,
      rowidAlias: s.rowidAlias,
      rows: null,
      events: 0,
    };
    o = { t, rows: null, events: 0 };
    this.#tables.set(name, o);
    return o;
  }

  #shapeOf(name: string): SourceShape {
    this.#captured ??= capturedShapes(this.#source);
    const s = this.#captured.get(name);
    if (s === undefined) throw new InvalidInputError('TABLE_NOT_FOUND', `Table ${name} vanished during export.`);
    return s;
  }

  /** A snapshot of `tables` (default: every captured images/keys table), which must come first. */
  addSnapshot(tables: readonly string[] | undefined): { readonly cursor: string; readonly seq: number; readonly rows: number } {
    if (this.#batches > 0 || this.#snapshot !== undefined) throw new Error('a segment holds one snapshot, before its batches');
    const snap = snapshot(this.#source, tables, {
      onTable: (t) => {
        const info = describeTable(this.#source, t.name);
        if (info === undefined) throw new InvalidInputError('TABLE_NOT_FOUND', `Table ${t.name} vanished during export.`);
        const o = this.#table(t.name, sourceShape(info, t.excluded));
        o.rows = 0;
        this.#db.exec(rowsDdl(o.t.tno, o.t.columns.length));
      },
      onRow: (t, values) => {
        const o = this.#tables.get(t.name) as Open;
        // A lone surrogate (a UTF-16 source's) as the segment's own bytes for it: bound as a string it would become U+FFFD.
        const vs = o.t.columns.map((_, i) => storable(this.#db, values[i] ?? null));
        const sql = `INSERT INTO ${rowsTable(o.t.tno)} VALUES (${vs.map(placeholderFor).join(', ')})`;
        const plain = vs.every((v) => placeholderFor(v) === '?');
        const stmt = plain ? (o.insertRow ??= this.#db.prepare(sql)) : this.#db.prepare(sql);
        stmt.run(...vs.map(toBindable));
        o.rows = (o.rows ?? 0) + 1;
        this.#rows++;
      },
    });
    this.#snapshot = { seq: snap.seq, cursor: snap.cursor };
    this.#cursor = snap.cursor;
    this.#fromSeq = snap.seq;
    this.#toSeq = snap.seq;
    return { cursor: snap.cursor, seq: snap.seq, rows: snap.rows };
  }

  /** One batch read from the source (readBatch), after the snapshot and the batches before it. */
  addBatch(b: Batch): void {
    if (this.#toSeq !== undefined && b.fromSeq !== this.#toSeq)
      throw new Error(`segment batches must follow on: ${b.fromSeq} after ${this.#toSeq}`);
    const stmts = new Map<string, Statement>();
    for (const e of b.events) {
      const o = this.#table(e.table);
      if (o.events === 0) this.#db.exec(eventsDdl(o.t.tno, o.t.columns.length));
      const vs = eventValues(o.t, e).map((v) => storable(this.#db, v));
      const placeholders = vs.map(placeholderFor).join(', ');
      const sql = `INSERT INTO ${eventsTable(o.t.tno)} VALUES (${placeholders})`;
      let stmt = stmts.get(sql);
      if (stmt === undefined) stmts.set(sql, (stmt = this.#db.prepare(sql)));
      stmt.run(...vs.map(toBindable));
      o.events++;
    }
    this.#db.prepare(`INSERT INTO ${BATCHES_TABLE} VALUES (?, ?, ?, ?)`).run(b.toSeq, b.fromSeq, b.to, b.events.length);
    this.#events += b.events.length;
    this.#batches++;
    this.#fromSeq ??= b.fromSeq;
    this.#toSeq = b.toSeq;
    this.#cursor = b.to;
  }

  get events(): number {
    return this.#events;
  }

  /** The seq range so far: (from, to]. */
  get range(): { readonly fromSeq: number; readonly toSeq: number } | undefined {
    return this.#fromSeq === undefined || this.#toSeq === undefined ? undefined : { fromSeq: this.#fromSeq, toSeq: this.#toSeq };
  }

  /**
   * Seals the segment (meta and digest), syncs it and renames it into place
   * (at `file`, when given). `sync: false` leaves the sync out, for a
   * segment read back at once and removed (a broker message: segment-message.ts).
   */
  finish(file: string = this.#file, options: { readonly sync?: boolean } = {}): SegmentSummary {
    if (this.#tmp === '') throw new Error('a segment made in memory is finished by finishInMemory');
    const db = this.#db;
    const digest = this.#seal((pageSize, skip) => segmentDigest(this.#tmp, pageSize, skip));
    closeDatabase(db);
    if (options.sync !== false) {
      const fd = fs.openSync(this.#tmp, 'r');
      try {
        fs.fsyncSync(fd);
      } finally {
        fs.closeSync(fd);
      }
    }
    fs.renameSync(this.#tmp, file);
    return {
      file,
      bytes: fs.statSync(file).size,
      events: this.#events,
      rows: this.#rows,
      batches: this.#batches,
      cursor: this.#cursor,
      digest,
    };
  }

  /** The segment made in memory (file null), sealed as finish() seals a file: its bytes. */
  finishInMemory(): { readonly data: Buffer; readonly digest: string; readonly events: number } {
    if (this.#tmp !== '') throw new Error('a segment made in a file is finished by finish');
    const db = this.#db;
    try {
      const digest = this.#seal((pageSize, skip) => segmentDigestOfBytes(db.serialize(), pageSize, skip));
      return { data: db.serialize(), digest, events: this.#events };
    } finally {
      closeDatabase(db);
    }
  }

  /**
   * Writes the tables' and the meta's rows and commits, then the digest of
   * the pages as they are now (digestOf), which writing it into the meta
   * leaves alone: it touches only page 1 and the meta table's pages.
   */
  #seal(digestOf: (pageSize: number, skip: ReadonlySet<number>) => string): string {
    const db = this.#db;
    const tables = [...this.#tables.values()].map((o) => ({ ...o.t, rows: o.rows, events: o.events }));
    const ins = db.prepare(`INSERT INTO ${TABLES_TABLE} VALUES (?, ?, ?, ?, ?, ?, ?, ?)`);
    for (const t of tables)
      ins.run(
        t.tno,
        t.name,
        JSON.stringify(t.columns),
        JSON.stringify(t.keyColumns),
        t.withoutRowid ? 1 : 0,
        t.rowidAlias ? 1 : 0,
        t.rows,
        t.events,
      );
    const meta: Record<string, string | number> = {
      wire: SEGMENT_WIRE_VERSION,
      source_id: this.#sourceId,
      encoding: textEncoding(db),
      from_seq: this.#fromSeq ?? 0,
      to_seq: this.#toSeq ?? 0,
      cursor: this.#cursor ?? '',
      events: this.#events,
      rows: this.#rows,
      batches: this.#batches,
      tables: tables.length,
      ...(this.#snapshot === undefined ? {} : { snapshot_seq: this.#snapshot.seq, snapshot_cursor: this.#snapshot.cursor }),
    };
    const put = db.prepare(`INSERT INTO ${META_TABLE} VALUES (?, ?)`);
    for (const [k, v] of Object.entries(meta)) put.run(k, typeof v === 'number' ? BigInt(v) : v);
    put.run('frame', frameDigest(db, 'main'));
    commitHeld(db);
    const digest = digestOf(Number(db.pragma('page_size', { simple: true })), metaPages(db, 'main'));
    put.run('digest', digest);
    return digest;
  }

  /** Drops the unfinished file. */
  abandon(): void {
    try {
      closeDatabase(this.#db);
    } catch {
      /* already closed */
    }
    if (this.#tmp !== '') fs.rmSync(this.#tmp, { force: true });
  }
}

/*
 * The shapes of a source's captured tables, per connection, kept while its
 * schema_version is the same: a publisher of segments makes a writer per
 * message, and each read every captured table's shape again (a
 * describeTable each, however few tables the message touched). Whatever
 * changes a shape (DDL, capture enabled, re-armed or altered, columns
 * excluded) changes the schema.
 */
const shapesKept = slot('segment-captured-shapes', (): { version?: number; shapes?: ReadonlyMap<string, SourceShape> } => ({}));

function capturedShapes(source: Db): ReadonlyMap<string, SourceShape> {
  const kept = connectionState(source).get(shapesKept);
  const version = schemaVersion(source);
  if (kept.shapes !== undefined && kept.version === version) return kept.shapes;
  const shapes = new Map<string, SourceShape>();
  for (const c of readTables(source)) {
    const info = describeTable(source, c.name);
    if (info !== undefined) shapes.set(c.name, sourceShape(info, c.excluded));
  }
  kept.version = version;
  kept.shapes = shapes;
  return shapes;
}

/** An event as a row of its table's events table: seq, op, ts, mask, keys, b0..b(n-1), a0..a(n-1). */
function eventValues(t: SegmentTable, e: ChangeEvent): SqlValue[] {
  const names = t.columns.map((c) => c.name);
  const image = (r: Row | null): SqlValue[] => names.map((c) => (r === null ? null : (r[c] ?? null)));
  const op = OP[e.op];
  const mask = e.op === 'update' ? encodeMask(names, e.changed) : null;
  // A keys-mode event: its keys (and whether it has its row) in the JSONL value encoding; its images never hold a before.
  const keys =
    e.image === 'full'
      ? null
      : JSON.stringify({
          key: e.key.map(toJsonValue),
          ...(e.op === 'update' ? { beforeKey: e.beforeKey.map(toJsonValue) } : {}),
          after: e.after !== null,
        });
  const before = e.image === 'full' && e.op !== 'insert' ? image(e.before) : image(null);
  const after = e.op !== 'delete' ? image(e.after) : image(null);
  return [BigInt(e.seq), BigInt(op), BigInt(e.ts), mask, keys, ...before, ...after];
}
