import fs from 'node:fs';
import { z } from 'zod';
import type { Db } from '../sqlite/index.ts';
import { anyOf } from '../sqlite/index.ts';
import {
  openDatabase,
  openImage,
  closeDatabase,
  INT64_OUT_OF_RANGE,
  jsonValueSchema,
  TEXT_ENCODINGS,
  type TextEncoding,
} from '../sqlite/index.ts';
import { InvalidInputError } from '../errors.ts';
import { tooWideInteger } from './typed-values.ts';
import { anyChangedSql, maskFor } from '../capture/index.ts';
import {
  BATCHES_TABLE,
  eventsTable,
  expectedObjects,
  META_TABLE,
  rowsTable,
  SEGMENT_APP_ID,
  SEGMENT_WIRE_VERSION,
  segmentDigest,
  segmentDigestOfBytes,
  metaPages,
  frameDigest,
  SQLITE_MAGIC,
  TABLES_TABLE,
  type SegmentTable,
} from './segment-wire.ts';

/*
 * A segment is untrusted input (docs/segment.md, "Checks"). Before it is
 * attached to a target, its file is checked: first its header bytes (a
 * SQLite file, a sluice segment of a wire version this sluice reads, a
 * rollback journal, and exactly as many bytes as its pages: not truncated,
 * nothing appended), then, on a read-only connection of its own with
 * trusted_schema=OFF, its schema (exactly the wire schema's objects, each
 * with the DDL sluice writes: no other table, view, trigger or index), its
 * meta, counts and seq ranges, its masks, and its digest. Each refusal names
 * the file, the rule and the fix; nothing is committed.
 */

export interface SegmentMeta {
  readonly sourceId: string;
  readonly encoding: TextEncoding;
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly cursor: string;
  readonly events: number;
  readonly rows: number;
  readonly digest: string;
  /** The frame digest (segment-wire.ts frameDigest); absent in a segment of an older sluice. */
  readonly frame?: string;
  readonly snapshot?: { readonly seq: number; readonly cursor: string };
}

export interface SegmentBatchRow {
  readonly fromSeq: number;
  readonly toSeq: number;
  readonly cursor: string;
  readonly events: number;
}

/** What a checked segment holds, and what its file was when checked. */
export interface CheckedSegment {
  readonly file: string;
  readonly size: number;
  readonly mtimeMs: number;
  readonly meta: SegmentMeta;
  readonly tables: readonly SegmentTable[];
  readonly batches: readonly SegmentBatchRow[];
  /** The tables (tno) with keys-mode events (segment_events_<tno>.keys not NULL), counted by the check: no other has one. */
  readonly keyed: ReadonlySet<number>;
  /** Its schema objects, name to DDL (to compare once attached). */
  readonly objects: ReadonlyMap<string, string>;
  /**
   * A segment checked in memory (checkSegmentBytes): the read-only connection
   * its bytes were checked on, left open, whose main is the segment (read
   * there, never attached); `file` is then its label. Closed by whoever reads
   * it (segmentItems).
   */
  readonly image?: Db;
}

/** Whether `file` starts as a SQLite file does (a segment, not a JSONL export). */
export function looksLikeSegment(file: string): boolean {
  const fd = fs.openSync(file, 'r');
  try {
    const b = Buffer.alloc(SQLITE_MAGIC.length);
    const n = fs.readSync(fd, b, 0, b.length, 0);
    return n === b.length && b.equals(SQLITE_MAGIC);
  } finally {
    fs.closeSync(fd);
  }
}

type Rule =
  'IMPORT_SEGMENT_VERSION' | 'IMPORT_SEGMENT_TRUNCATED' | 'IMPORT_SEGMENT_SCHEMA' | 'IMPORT_SEGMENT_DIGEST' | 'IMPORT_SEGMENT_MISMATCH';

const FIX: Record<Rule, string> = {
  IMPORT_SEGMENT_VERSION: 'Export it again with this sluice (sluice export --format segment), or import it with the sluice that wrote it.',
  IMPORT_SEGMENT_TRUNCATED: 'It was cut short or changed after it was written: copy it again whole, or export again.',
  IMPORT_SEGMENT_SCHEMA:
    'A segment holds only the tables sluice writes; this one was edited or is not a sluice segment. Export again, or import the file sluice wrote.',
  IMPORT_SEGMENT_DIGEST: 'Its rows were edited after it was written. Export again, or import the file sluice wrote.',
  IMPORT_SEGMENT_MISMATCH: 'Its rows do not match what its meta says; it was edited. Export again, or import the file sluice wrote.',
};

function refuse(file: string, rule: Rule, what: string): InvalidInputError {
  return new InvalidInputError(rule, `Segment ${file}: ${what}. Nothing of it was committed. ${FIX[rule]}`);
}

/** Checks the header bytes, then the file on its own read-only connection (see the top of this file). */
export function checkSegment(file: string): CheckedSegment {
  const stat = fs.statSync(file);
  checkHeader(file, stat.size);
  refuseJournal(file);
  const db = openDatabase(file, { readonly: true, role: 'segment' });
  try {
    db.pragma('trusted_schema = OFF');
    db.pragma('query_only = ON');
    const checked = checkOpen(db, file, (pageSize, skip) => segmentDigest(file, pageSize, skip));
    const after = fs.statSync(file);
    if (after.size !== stat.size || after.mtimeMs !== stat.mtimeMs)
      throw refuse(file, 'IMPORT_SEGMENT_TRUNCATED', 'it changed while it was checked');
    return { file, size: stat.size, mtimeMs: stat.mtimeMs, ...checked };
  } catch (err) {
    if (err instanceof InvalidInputError) throw err;
    // SQLITE_CORRUPT, SQLITE_NOTADB...: never a bare message without the file.
    throw refuse(file, 'IMPORT_SEGMENT_TRUNCATED', `SQLite cannot read it (${(err as Error).message})`);
  } finally {
    closeDatabase(db);
  }
}

/**
 * checkSegment of a segment's bytes held in memory (a broker's message,
 * named `label` in errors): the same checks, on a read-only in-memory
 * connection of its own (no file is written), which the result keeps open
 * (CheckedSegment.image) for segmentItems to read the segment from.
 */
export function checkSegmentBytes(label: string, bytes: Uint8Array): CheckedSegment {
  checkHeaderBytes(label, Buffer.from(bytes.buffer, bytes.byteOffset, Math.min(100, bytes.byteLength)), bytes.byteLength);
  let db: Db | undefined;
  try {
    db = openImage(bytes, `Segment ${label}`);
    db.pragma('trusted_schema = OFF');
    db.pragma('query_only = ON');
    const checked = checkOpen(db, label, (pageSize, skip) => segmentDigestOfBytes(bytes, pageSize, skip));
    const image = db;
    db = undefined;
    return { file: label, size: bytes.byteLength, mtimeMs: 0, ...checked, image };
  } catch (err) {
    if (err instanceof InvalidInputError && err.code !== 'NOT_A_DATABASE') throw err;
    throw refuse(label, 'IMPORT_SEGMENT_TRUNCATED', `SQLite cannot read it (${(err as Error).message})`);
  } finally {
    if (db !== undefined) closeDatabase(db);
  }
}

/**
 * An error SQLite raised reading a checked segment's rows (a page damaged
 * in a way its checks do not read, such as an overflow chain of a value
 * they never look at, with its digest made again): refused, naming it.
 * `applied`: its events, read in SQL as they are applied (an attached
 * segment); the groups of its batches committed before stay applied (each
 * commits on its own, as a JSONL file's do), and the refusal says so.
 */
export function unreadableSegment(file: string, err: unknown, applied = false): Error {
  if (err instanceof InvalidInputError) return err;
  const why = `SQLite cannot read its ${applied ? 'events' : 'rows'} (${(err as Error).message})`;
  if (!applied) return refuse(file, 'IMPORT_SEGMENT_TRUNCATED', why);
  return new InvalidInputError(
    'IMPORT_SEGMENT_TRUNCATED',
    `Segment ${file}: ${why}. The batches being applied were rolled back; any batches of it committed before them stay applied, and an import of it again skips them. ${FIX.IMPORT_SEGMENT_TRUNCATED}`,
  );
}

/** A rollback journal or WAL beside a segment would be played into it when it is read: refused. */
export function refuseJournal(file: string): void {
  for (const suffix of ['-journal', '-wal'])
    if (fs.existsSync(`${file}${suffix}`))
      throw refuse(
        file,
        'IMPORT_SEGMENT_TRUNCATED',
        `a ${suffix.slice(1)} file lies beside it (${file}${suffix}), which SQLite would play into it`,
      );
}

function checkHeader(file: string, size: number): void {
  const h = Buffer.alloc(100);
  const fd = fs.openSync(file, 'r');
  let n: number;
  try {
    n = fs.readSync(fd, h, 0, 100, 0);
  } finally {
    fs.closeSync(fd);
  }
  checkHeaderBytes(file, h.subarray(0, n), size);
}

/** The header checks of a segment of `size` bytes, on its first bytes (up to 100). */
function checkHeaderBytes(file: string, h: Buffer, size: number): void {
  const n = h.length;
  if (n < 100 || !h.subarray(0, 16).equals(SQLITE_MAGIC))
    throw refuse(file, 'IMPORT_SEGMENT_TRUNCATED', `it does not start with a SQLite header (${n} bytes read)`);
  const appId = h.readUInt32BE(68);
  if (appId !== SEGMENT_APP_ID)
    throw refuse(
      file,
      'IMPORT_SEGMENT_SCHEMA',
      `it is a SQLite database but not a sluice segment (application_id ${appId}, a segment's is ${SEGMENT_APP_ID})`,
    );
  const version = h.readUInt32BE(60);
  if (version !== SEGMENT_WIRE_VERSION)
    throw refuse(file, 'IMPORT_SEGMENT_VERSION', `it is of wire version ${version}; this sluice reads version ${SEGMENT_WIRE_VERSION}`);
  if (h[18] !== 1 || h[19] !== 1)
    throw refuse(file, 'IMPORT_SEGMENT_TRUNCATED', 'it is in WAL mode; a segment is one file with a rollback journal');
  const rawPage = h.readUInt16BE(16);
  const pageSize = rawPage === 1 ? 65536 : rawPage;
  const pages = h.readUInt32BE(28);
  if (pages === 0 || pages * pageSize !== size)
    throw refuse(
      file,
      'IMPORT_SEGMENT_TRUNCATED',
      `it has ${size} bytes, but its header says ${pages} pages of ${pageSize} bytes (${pages * pageSize})`,
    );
}

const columnsSchema = z
  .array(z.strictObject({ name: z.string(), type: z.string(), collate: z.string(), anyNumeric: z.literal(true).optional() }))
  .min(1);
const keysSchema = z.array(z.string()).min(1);
const int = (v: unknown): v is bigint => typeof v === 'bigint';

function checkOpen(
  db: Db,
  file: string,
  digestOf: (pageSize: number, skip: ReadonlySet<number>) => string,
): Omit<CheckedSegment, 'file' | 'size' | 'mtimeMs'> {
  const objects = new Map<string, string>();
  for (const o of db.prepare('SELECT type, name, sql FROM main.sqlite_schema').all() as {
    type: string;
    name: string;
    sql: string | null;
  }[])
    objects.set(o.name, `${o.type}\0${o.sql ?? ''}`);
  const fail = (rule: Rule, what: string) => refuse(file, rule, what);
  // The three fixed tables first, each exactly as written, before any is read.
  const fixed = expectedObjects([]);
  for (const [name, ddl] of fixed)
    if (objects.get(name) !== `table\0${ddl}`) throw fail('IMPORT_SEGMENT_SCHEMA', `its ${name} table is missing or not the wire schema's`);
  const metaRows = db.prepare(`SELECT name, value FROM main.${META_TABLE}`).raw().all() as [string, unknown][];
  const meta = readMeta(new Map(metaRows), (what) => fail('IMPORT_SEGMENT_MISMATCH', what));
  const tables = readTables(db, (what) => fail('IMPORT_SEGMENT_MISMATCH', what));
  const expected = expectedObjects(tables);
  for (const [name, v] of objects) {
    const want = expected.get(name);
    if (want === undefined)
      throw fail('IMPORT_SEGMENT_SCHEMA', `it holds ${v.split('\0')[0]} ${name}, which is not part of the wire schema`);
    if (v !== `table\0${want}`) throw fail('IMPORT_SEGMENT_SCHEMA', `its ${name} is not the wire schema's (${v.replace('\0', ' ')})`);
  }
  for (const name of expected.keys()) if (!objects.has(name)) throw fail('IMPORT_SEGMENT_SCHEMA', `it lacks table ${name}`);
  const encoding = db.pragma('encoding', { simple: true }) as string;
  if (encoding !== meta.encoding)
    throw fail('IMPORT_SEGMENT_MISMATCH', `its meta says text is ${meta.encoding}, but the file stores ${encoding}`);
  const batches = readBatches(db, meta, (what) => fail('IMPORT_SEGMENT_MISMATCH', what));
  const keyed = checkRows(db, meta, tables, batches, (what) => fail('IMPORT_SEGMENT_MISMATCH', what));
  const pageSize = Number(db.pragma('page_size', { simple: true }));
  const digest = digestOf(pageSize, metaPages(db, 'main'));
  if (digest !== meta.digest) throw fail('IMPORT_SEGMENT_DIGEST', `its meta says digest ${meta.digest}, but its rows digest to ${digest}`);
  // (No frame: a segment of an older sluice, whose page digest alone is checked.)
  if (meta.frame !== undefined && frameDigest(db, 'main') !== meta.frame)
    throw fail('IMPORT_SEGMENT_DIGEST', "its schema's root pages or its meta entries are not those its frame digest was made of");
  return { meta, tables, batches, keyed, objects: new Map([...objects].map(([k, v]) => [k, v.split('\0')[1] as string])) };
}

const META_KEYS = new Set([
  'wire',
  'source_id',
  'encoding',
  'from_seq',
  'to_seq',
  'cursor',
  'events',
  'rows',
  'batches',
  'tables',
  'digest',
  'frame',
  'snapshot_seq',
  'snapshot_cursor',
]);

function readMeta(m: Map<string, unknown>, fail: (what: string) => Error): SegmentMeta {
  for (const k of m.keys()) if (!META_KEYS.has(k)) throw fail(`its meta has an unknown entry ${JSON.stringify(k)}`);
  const num = (k: string): number => {
    const v = m.get(k);
    if (!int(v) || v < 0n || v > BigInt(Number.MAX_SAFE_INTEGER)) throw fail(`its meta's ${k} is not a count or seq`);
    return Number(v);
  };
  const text = (k: string): string => {
    const v = m.get(k);
    if (typeof v !== 'string') throw fail(`its meta's ${k} is not text`);
    return v;
  };
  if (num('wire') !== SEGMENT_WIRE_VERSION)
    throw fail(`its meta says wire version ${String(m.get('wire'))}, its header ${SEGMENT_WIRE_VERSION}`);
  const encoding = text('encoding');
  if (!(TEXT_ENCODINGS as readonly string[]).includes(encoding)) throw fail(`its meta's encoding ${encoding} is not a text encoding`);
  const digest = text('digest');
  if (!/^[0-9a-f]{64}$/.test(digest)) throw fail('its meta has no digest');
  const frame = m.has('frame') ? text('frame') : undefined;
  if (frame !== undefined && !/^[0-9a-f]{64}$/.test(frame)) throw fail("its meta's frame is not a digest");
  const hasSnap = m.has('snapshot_seq') || m.has('snapshot_cursor');
  return {
    sourceId: text('source_id'),
    encoding: encoding as TextEncoding,
    fromSeq: num('from_seq'),
    toSeq: num('to_seq'),
    cursor: text('cursor'),
    events: num('events'),
    rows: num('rows'),
    digest,
    ...(frame === undefined ? {} : { frame }),
    ...(hasSnap ? { snapshot: { seq: num('snapshot_seq'), cursor: text('snapshot_cursor') } } : {}),
  };
}

function readTables(db: Db, fail: (what: string) => Error): SegmentTable[] {
  const rows = db.prepare(`SELECT * FROM main.${TABLES_TABLE} ORDER BY tno`).all() as Record<string, unknown>[];
  const names = new Set<string>();
  return rows.map((r, i) => {
    const tno = Number(r.tno);
    if (tno !== i + 1) throw fail(`its tables are not numbered 1..${rows.length}`);
    const name = r.name;
    if (typeof name !== 'string' || names.has(name)) throw fail(`its table ${tno} has no name, or one used twice`);
    names.add(name);
    let columns: z.infer<typeof columnsSchema>;
    let keyColumns: string[];
    try {
      columns = columnsSchema.parse(JSON.parse(String(r.columns)));
      keyColumns = keysSchema.parse(JSON.parse(String(r.key_columns)));
    } catch {
      throw fail(`table ${name}'s columns or key columns are not a table shape`);
    }
    if (!keyColumns.every((k) => columns.some((c) => c.name === k))) throw fail(`table ${name}'s key columns are not among its columns`);
    const flag = (v: unknown) => {
      if (v !== 0n && v !== 1n) throw fail(`table ${name}'s without_rowid or rowid_alias is not 0 or 1`);
      return v === 1n;
    };
    const count = (v: unknown) => {
      if (!int(v) || v < 0n) throw fail(`table ${name}'s row or event count is not a count`);
      return Number(v);
    };
    return {
      tno,
      name,
      columns,
      keyColumns,
      withoutRowid: flag(r.without_rowid),
      rowidAlias: flag(r.rowid_alias),
      rows: r.rows === null ? null : count(r.rows),
      events: count(r.events),
    };
  });
}

function readBatches(db: Db, meta: SegmentMeta, fail: (what: string) => Error): SegmentBatchRow[] {
  const rows = db.prepare(`SELECT to_seq, from_seq, cursor, events FROM main.${BATCHES_TABLE} ORDER BY to_seq`).raw().all() as unknown[][];
  let at = meta.snapshot?.seq ?? meta.fromSeq;
  if (meta.snapshot !== undefined && meta.snapshot.seq !== meta.fromSeq)
    throw fail(`its snapshot is at seq ${meta.snapshot.seq}, but it starts at ${meta.fromSeq}`);
  const out = rows.map(([to, from, cursor, events]) => {
    if (!int(to) || !int(from) || !int(events) || typeof cursor !== 'string' || events < 0n)
      throw fail('a row of its batches is not (to_seq, from_seq, cursor, events)');
    if (Number(from) !== at || to <= from) throw fail(`its batch (${from}, ${to}] does not follow on from seq ${at}`);
    at = Number(to);
    return { fromSeq: Number(from), toSeq: Number(to), cursor, events: Number(events) };
  });
  if (at !== meta.toSeq) throw fail(`its batches end at seq ${at}, but its meta says ${meta.toSeq}`);
  const last = out.at(-1)?.cursor ?? meta.snapshot?.cursor;
  if (last !== undefined && last !== meta.cursor) throw fail("its meta's cursor is not its last batch's");
  return out;
}

function checkRows(
  db: Db,
  meta: SegmentMeta,
  tables: readonly SegmentTable[],
  batches: readonly SegmentBatchRow[],
  fail: (what: string) => Error,
): ReadonlySet<number> {
  const count = (sql: string, ...params: unknown[]) =>
    Number(
      db
        .prepare(sql)
        .pluck()
        .get(...params),
    );
  let rows = 0;
  let events = 0;
  const perBatch = batches.map(() => 0);
  const keyed = new Set<number>();
  for (const t of tables) {
    const n = t.columns.length;
    if (t.rows !== null) {
      if (meta.snapshot === undefined) throw fail(`table ${t.name} has snapshot rows, but the segment has no snapshot`);
      const rt = `main.${rowsTable(t.tno)}`;
      // With an INTEGER PRIMARY KEY, its rows and those whose key is not an integer in one scan.
      const k = t.rowidAlias ? t.columns.findIndex((c) => c.name === t.keyColumns[0]) : -1;
      const [have, badKeys] =
        k < 0
          ? [count(`SELECT count(*) FROM ${rt}`), 0]
          : ((db.prepare(`SELECT count(*), count(*) FILTER (WHERE typeof(c${k}) <> 'integer') FROM ${rt}`).raw().get() as unknown[]).map(
              Number,
            ) as [number, number]);
      if (have !== t.rows) throw fail(`table ${t.name} says it has ${t.rows} snapshot rows, but ${have} are there`);
      rows += have;
      if (badKeys > 0) throw fail(`a snapshot row of table ${t.name} has a key that is not an integer, in its INTEGER PRIMARY KEY`);
    }
    if (t.events === 0) continue;
    const ev = `main.${eventsTable(t.tno)}`;
    const b = (i: number) => `b${i}`;
    const a = (i: number) => `a${i}`;
    // The images an op does not read (an insert's b*, a delete's a*, a keys event's b*) are never read
    // (segment-batch.ts), and a mask on anything but an update is never read either, so they are not checked.
    // A mask is the journal's (capture/mask.ts): it must name every column whose images differ (a projection skips by it).
    const names = t.columns.map((c) => c.name);
    const shape =
      n > 63
        ? `typeof(mask) <> 'blob' OR length(mask) <> ${Math.ceil(n / 16) * 2}`
        : `typeof(mask) <> 'integer' OR mask < 0 OR mask >= ${(1n << BigInt(n)).toString()}`;
    const hidden = names.map(
      (c, i) => `(NOT ${anyChangedSql('mask', maskFor(names, [c]))} AND (typeof(${b(i)}) <> typeof(${a(i)}) OR ${b(i)} IS NOT ${a(i)}))`,
    );
    const alias = t.rowidAlias ? t.columns.findIndex((c) => c.name === t.keyColumns[0]) : -1;
    const key =
      alias < 0
        ? ''
        : ` OR (op <> 1 AND keys IS NULL AND typeof(b${alias}) <> 'integer') OR (op <> 3 AND typeof(a${alias}) NOT IN ('integer', 'null'))`;
    // Not `op NOT IN (1, 2, 3)`: a list of three is a lookup in a table SQLite builds, per row, and as a count's FILTER
    // (below) it passes a NULL op (which a crafted file can hold in spite of its NOT NULL), where a WHERE refused it.
    const bad = `(op IS NOT 1 AND op IS NOT 2 AND op IS NOT 3) OR typeof(ts) <> 'integer' OR (keys IS NOT NULL AND (typeof(keys) <> 'text' OR json_valid(keys) = 0))${key}
         OR (op = 2 AND mask IS NOT NULL AND (${shape} OR (keys IS NULL AND ${anyOf(hidden)})))`;
    // One scan of the table, range by range (each batch's, by its seq primary key, and what lies before and after them
    // all): its events, those not well formed, and those in keys mode, where a count, a range count per batch, the
    // well-formedness test and the keys' test each read every row of it.
    const scan = (where: string) => db.prepare(`SELECT count(*), count(*) FILTER (WHERE ${bad}), count(keys) FROM ${ev}${where}`).raw();
    const tally = { events: 0, bad: 0, keyed: 0 };
    const add = (got: unknown[] | undefined) => {
      const [e, x, k] = (got ?? [0, 0, 0]).map(Number) as [number, number, number];
      tally.events += e;
      tally.bad += x;
      tally.keyed += k;
      return e;
    };
    const first = batches[0];
    const last = batches.at(-1);
    if (first === undefined || last === undefined) add(scan('').get() as unknown[]);
    else {
      add(scan(' WHERE seq <= ?').get(first.fromSeq) as unknown[]);
      const inRange = scan(' WHERE seq > ? AND seq <= ?');
      batches.forEach((bt, i) => (perBatch[i] = (perBatch[i] as number) + add(inRange.get(bt.fromSeq, bt.toSeq) as unknown[])));
      add(scan(' WHERE seq > ?').get(last.toSeq) as unknown[]);
    }
    const have = tally.events;
    if (have !== t.events) throw fail(`table ${t.name} says it has ${t.events} events, but ${have} are there`);
    events += have;
    if (tally.bad > 0)
      throw fail(
        `${tally.bad} events of table ${t.name} are not well formed (an op, ts or keys that is not one, a key that is not an integer in its INTEGER PRIMARY KEY, or a changed-column mask that is malformed or leaves out a column the images change)`,
      );
    if (tally.keyed > 0) {
      keyed.add(t.tno);
      checkKeys(db, ev, t, fail);
    }
  }
  if (rows !== meta.rows) throw fail(`its meta says ${meta.rows} snapshot rows, but its tables hold ${rows}`);
  if (events !== meta.events) throw fail(`its meta says ${meta.events} events, but its tables hold ${events}`);
  batches.forEach((bt, i) => {
    if (perBatch[i] !== bt.events)
      throw fail(`its batch (${bt.fromSeq}, ${bt.toSeq}] says ${bt.events} events, but ${perBatch[i]} are in its range`);
  });
  if (perBatch.reduce((x, y) => x + y, 0) !== events) throw fail('some of its events lie outside every batch');
  return keyed;
}

/**
 * The keys of table `t`'s keys-mode events (JSON text, checked valid above),
 * decoded as an import decodes them (segment-batch.ts): each must be the
 * table's key in the JSONL value encoding, every value one SQLite holds
 * (an INTEGER within 64 bits), so that none fails, or binds wrongly,
 * while its batch is applied.
 */
function checkKeys(db: Db, ev: string, t: SegmentTable, fail: (what: string) => Error): void {
  const key = z.array(z.unknown()).length(t.keyColumns.length);
  const schema = z.strictObject({ key, beforeKey: key.optional(), after: z.boolean() });
  const rows = db.prepare(`SELECT seq, keys FROM ${ev} WHERE keys IS NOT NULL ORDER BY seq`).raw().iterate() as Iterable<[bigint, string]>;
  for (const [seq, text] of rows) {
    const keys = schema.safeParse(JSON.parse(text));
    const what = `the keys of its event at seq ${seq} of table ${t.name}`;
    if (!keys.success) throw fail(`${what} are not {"key": [...], "beforeKey"?: [...], "after": true|false} with one value per key column`);
    for (const values of [keys.data.key, keys.data.beforeKey ?? []])
      values.forEach((v, i) => {
        const column = t.keyColumns[i] as string;
        if (jsonValueSchema.safeParse(v).success) return;
        const why = tooWideInteger(v) ? INT64_OUT_OF_RANGE : 'which is not a sluice JSON value (docs/jsonl.md)';
        throw fail(`${what}: key column ${column} has ${JSON.stringify(v)}, ${why}`);
      });
  }
}
