import fs from 'node:fs';
import type { Db, SqlValue } from '../sqlite/index.ts';
import {
  closeDatabase,
  openDatabase,
  encodingMismatch,
  fromDriver,
  lossyTextTest,
  quoteIdent,
  textEncoding,
  textFromDbBytes,
  toJsonValue,
  setOwn,
} from '../sqlite/index.ts';
import { InvalidInputError, errorCode, isSqliteCorrupt } from '../errors.ts';
import type { ExportItem, ReadOptions, ReadTotals } from './checked-reader.ts';
import { FORMAT_VERSION, type BatchLine, type RowLine, type SnapshotLine, type TableLine } from './format.ts';
import { refuseJournal, unreadableSegment, type CheckedSegment } from './segment-check.ts';
import { decodedSegmentBatch, segmentBatch } from './segment-batch.ts';
import { rowsTable } from './segment-wire.ts';

/*
 * A checked segment (segment-check.ts) as the items the importer applies
 * (checked-reader.ts ExportItem): attached read-only to the target's
 * connection with trusted_schema=OFF, its schema compared once more with the
 * one checked (and the file with its size and time then), then its snapshot
 * (table, row and snapshot items) and its batches, each batch carrying the
 * segment's events table as its relation (segment-batch.ts).
 */

/** The schema name a segment is attached under (one at a time per connection). */
export const SEGMENT_SCHEMA = '_sluice_segment';

/** Attaches `seg` to `db` (outside any transaction), detaching the one attached before. */
export function attachSegment(db: Db, seg: CheckedSegment): void {
  if (db.inTransaction) throw new Error('a segment is attached outside a transaction');
  detachSegment(db);
  // Attached with trusted_schema=OFF, and compared with the schema checked: nothing of it (no view, trigger, default
  // or CHECK: segment-check.ts refuses any) can run a function. Then the target's own setting again, for its own
  // triggers (a protected target's guards call sluice's function: protect.ts).
  const trusted = Number(db.pragma('trusted_schema', { simple: true }));
  db.pragma('trusted_schema = OFF');
  try {
    attachChecked(db, seg);
  } finally {
    db.pragma(`trusted_schema = ${trusted === 0 ? 'OFF' : 'ON'}`);
  }
}

function attachChecked(db: Db, seg: CheckedSegment): void {
  // By path (the driver opens no URI filenames, so no ?mode=ro): sluice only reads it, and a journal beside it, which SQLite would roll back into it, is refused.
  refuseJournal(seg.file);
  try {
    db.prepare(`ATTACH DATABASE ? AS ${SEGMENT_SCHEMA}`).run(seg.file);
  } catch (err) {
    throw new InvalidInputError(
      'IMPORT_SEGMENT_TRUNCATED',
      `Segment ${seg.file}: it cannot be attached to the target (${(err as Error).message}). Nothing of it was committed. Copy it again whole, or export again.`,
    );
  }
  const now = fs.statSync(seg.file);
  const objects = db.prepare(`SELECT name, sql FROM ${SEGMENT_SCHEMA}.sqlite_schema`).raw().all() as [string, string][];
  const same = objects.length === seg.objects.size && objects.every(([n, s]) => seg.objects.get(n) === s);
  if (!same || now.size !== seg.size || now.mtimeMs !== seg.mtimeMs) {
    detachSegment(db);
    throw new InvalidInputError(
      'IMPORT_SEGMENT_TRUNCATED',
      `Segment ${seg.file}: it changed between its check and its attach. Nothing of it was committed. Import it again once nothing writes it.`,
    );
  }
}

export function detachSegment(db: Db): void {
  const attached = db.prepare('SELECT 1 FROM pragma_database_list WHERE name = ?').get(SEGMENT_SCHEMA) !== undefined;
  if (attached) db.exec(`DETACH DATABASE ${SEGMENT_SCHEMA}`);
}

/**
 * The items of a checked segment, attached to `options.target` when first
 * read. A segment held in memory has its connection closed once read, and
 * also when the reader is returned before its first item (a generator's
 * finally does not run then: a stream of another source is refused before
 * the segment's items are read).
 */
export function segmentItems(seg: CheckedSegment, options: ReadOptions, firstLine = 0): AsyncGenerator<ExportItem, ReadTotals> {
  const items = readItems(seg, options, firstLine);
  const image = seg.image;
  if (image === undefined) return items;
  const stop = items.return.bind(items);
  items.return = async (value) => {
    try {
      return await stop(value);
    } finally {
      closeDatabase(image);
    }
  };
  return items;
}

async function* readItems(seg: CheckedSegment, options: ReadOptions, firstLine: number): AsyncGenerator<ExportItem, ReadTotals> {
  const target = options.target;
  if (target === undefined) throw new Error('segmentItems needs the target connection (ReadOptions.target)');
  try {
    return yield* itemsOf(seg, target, options, firstLine);
  } finally {
    if (seg.image !== undefined) closeDatabase(seg.image);
  }
}

/*
 * A segment held in memory (checkSegmentBytes: a broker's message) is read
 * on its own connection, where it was checked, and never attached: an
 * ATTACH and a DETACH each make every statement the target's connection
 * has prepared be prepared again at its next run (the apply's, the
 * cursor's, ...), about a millisecond of a small message's few for each
 * subscriber. Its batches' events are decoded from it and written into
 * the target's TEMP work table, as a JSONL batch's are (decodedBatch).
 */
async function* itemsOf(seg: CheckedSegment, target: Db, options: ReadOptions, firstLine: number): AsyncGenerator<ExportItem, ReadTotals> {
  // Its TEXT into a target in another encoding could not be exact: refused first, as a JSONL stream's marker is (an
  // attached one could not be attached at all; one read in memory would be decoded and stored converted).
  const have = textEncoding(target);
  if (have !== seg.meta.encoding) throw encodingMismatch(target.name, have, seg.meta.encoding);
  const db = seg.image ?? target;
  const schema = seg.image === undefined ? SEGMENT_SCHEMA : 'main';
  if (seg.image === undefined) attachSegment(target, seg);
  const m = seg.meta;
  const base = { v: FORMAT_VERSION, encoding: m.encoding, sourceId: m.sourceId } as const;
  let n = firstLine;
  if (m.snapshot !== undefined) {
    const snapTables = seg.tables.filter((t) => t.rows !== null);
    const lossy = lossyTextTest(db);
    for (const t of snapTables) {
      const table: TableLine = {
        type: 'table',
        ...base,
        seq: m.snapshot.seq,
        table: t.name,
        columns: t.columns.map((c) => ({ ...c })),
        keyColumns: [...t.keyColumns],
        withoutRowid: t.withoutRowid,
        rowidAlias: t.rowidAlias,
      };
      yield { kind: 'table', n: ++n, line: table };
      const rt = `${quoteIdent(schema)}.${rowsTable(t.tno)}`;
      const names = t.columns.map((c) => c.name);
      // In chunks (.all(), not an open iterator): the importer writes on this connection between rows.
      const stmt = db
        .prepare(`SELECT rowid, ${names.map((_, i) => `c${i}`).join(', ')} FROM ${rt} WHERE rowid > ? ORDER BY rowid LIMIT 5000`)
        .raw(true);
      for (let after: unknown = -(2n ** 63n); ;) {
        const chunk = readRows(seg, () => stmt.all(after) as unknown[][]);
        if (chunk.length === 0) break;
        after = (chunk.at(-1) as unknown[])[0];
        for (const r of chunk) {
          const row: Record<string, ReturnType<typeof toJsonValue>> = {};
          names.forEach((c, i) => {
            const v = r[1 + i];
            let value: SqlValue = fromDriver(v ?? null);
            if (lossy(v))
              value = textFromDbBytes(
                db,
                readRows(seg, () => db.prepare(`SELECT CAST(c${i} AS BLOB) FROM ${rt} WHERE rowid = ?`).pluck().get(r[0]) as Uint8Array),
              );
            setOwn(row, c, toJsonValue(value));
          });
          const line: RowLine = { type: 'row', sourceId: m.sourceId, seq: m.snapshot.seq, table: t.name, row };
          yield { kind: 'row', n: ++n, line };
        }
      }
    }
    const snap: SnapshotLine = {
      type: 'snapshot',
      ...base,
      seq: m.snapshot.seq,
      cursor: m.snapshot.cursor,
      tables: snapTables.map((t) => t.name),
      rows: Object.fromEntries(snapTables.map((t) => [t.name, t.rows ?? 0])),
      digest: m.digest,
    };
    options.onRead?.(0);
    yield { kind: 'snapshot', n: ++n, line: snap };
  }
  const byName = new Map(seg.tables.map((t) => [t.name, t]));
  const keyedTable = (table: string) => {
    const t = byName.get(table);
    return t !== undefined && seg.keyed.has(t.tno);
  };
  for (const b of seg.batches) {
    const line: BatchLine = {
      type: 'batch',
      ...base,
      seq: b.toSeq,
      fromSeq: b.fromSeq,
      cursor: b.cursor,
      count: b.events,
      digest: m.digest,
    };
    options.onRead?.(seg.size);
    yield {
      kind: 'batch',
      n: ++n,
      line,
      events: [],
      ...(seg.image === undefined ? { unreadable: (err: unknown) => attachedUnreadable(seg, err) } : {}),
      segment: (table, columns) =>
        seg.image === undefined
          ? segmentBatch(target, SEGMENT_SCHEMA, byName.get(table), table, columns, b.fromSeq, b.toSeq, keyedTable(table))
          : decodedSegmentBatch(target, seg.image, byName.get(table), table, columns, b.fromSeq, b.toSeq, (err) =>
              unreadableSegment(seg.file, err),
            ),
    };
  }
  return { lines: n - firstLine, incompleteTail: 0 };
}

/**
 * An error an attached segment's batch raised while it was applied in SQL:
 * when it says a file is damaged and the segment fails SQLite's own check
 * (which follows the overflow chains its checks never read), the segment's
 * refusal naming it; else undefined (the target's damage is the target's
 * to name).
 */
function attachedUnreadable(seg: CheckedSegment, err: unknown): Error | undefined {
  if (!isSqliteCorrupt(err) && !String(errorCode(err) ?? '').startsWith('SQLITE_IOERR')) return undefined;
  // (Opened again on its own: by now the import may have detached it. A file that cannot be opened, gone
  // since, proves nothing of its pages: only a check that ran and found damage is the segment's.)
  let db: Db;
  try {
    db = openDatabase(seg.file, { readonly: true, role: 'segment' });
  } catch {
    return undefined;
  }
  try {
    if (db.pragma('quick_check', { simple: true }) === 'ok') return undefined;
  } catch {
    /* the check itself could not read it: damaged */
  } finally {
    closeDatabase(db);
  }
  return unreadableSegment(seg.file, err, true);
}

/** Rows of the segment read by `read`; an error SQLite raises reading them names the segment (unreadableSegment). */
function readRows<T>(seg: CheckedSegment, read: () => T): T {
  try {
    return read();
  } catch (err) {
    throw unreadableSegment(seg.file, err);
  }
}
