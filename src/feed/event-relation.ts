import type { Db } from '../sqlite/index.ts';
import { isRawText, placeholderFor, toBindable, type SqlValue, cachedStatement, workTable } from '../sqlite/index.ts';
import {
  imageColumns,
  journalColumn,
  journalRange,
  MASK_COLUMN,
  OP_DELETE,
  OP_INSERT,
  OP_UPDATE,
  encodeMask,
  journalHasMask,
} from '../capture/index.ts';
import type { ChangeEvent, Row } from './events.ts';
import { storable } from './decoded-rows.ts';

/*
 * A batch's events as a relation that set-based appliers read in SQL, one
 * row per event keyed by seq. Its physical layout (the journal's: op codes,
 * both images in c0..c(2n-1)) is known here and in capture only: readers
 * use the accessors, which give SQL over a row read as `alias`.
 */
export interface EventRelation {
  /** SQL to use as a subquery (columns seq, ts, the mask and the images; read through the accessors). */
  readonly sql: string;
  /** Values for its named parameters: bind them to every statement that reads it. */
  readonly params: Readonly<Record<string, number>>;
  /** The event has a before-image / an after-image. */
  hasBefore(alias: string): string;
  hasAfter(alias: string): string;
  /** Source column i (of the table's n) of the before-image / after-image. */
  before(alias: string, i: number): string;
  after(alias: string, i: number): string;
  /**
   * The event's changed-column mask (src/capture/mask.ts; NULL: not known,
   * every column changed, as for every insert and delete). Test it with
   * anyChangedSql.
   */
  mask(alias: string): string;
  /**
   * SQL that is true when the event may change the rows of the projection
   * it is applied to; false for an update of columns it does not read
   * (ChangeBatch.readingOnly), which is checked like any event and not
   * written. Always true unless the batch was marked so.
   */
  writes(alias: string): string;
}

const col = (alias: string, name: string) => (alias === '' ? name : `${alias}.${name}`);

function relation(sql: string, params: Readonly<Record<string, number>>, n: number): EventRelation {
  return {
    sql,
    params,
    hasBefore: (a) => `${col(a, 'op')} <> ${OP_INSERT}`,
    hasAfter: (a) => `${col(a, 'op')} <> ${OP_DELETE}`,
    before: (a, i) => col(a, journalColumn(i)),
    after: (a, i) => `CASE WHEN ${col(a, 'op')} = ${OP_INSERT} THEN ${col(a, journalColumn(i))} ELSE ${col(a, journalColumn(n + i))} END`,
    mask: (a) => col(a, MASK_COLUMN),
    writes: () => '1',
  };
}

/** The journal's events of table `tid` (n columns wide) in (lo, hi]. */
export function journalEvents(db: Db, tid: number, n: number, lo: number, hi: number): EventRelation {
  const r = journalRange(tid, n, lo, hi, journalHasMask(db));
  return relation(r.sql, r.params, n);
}

/** Events per multi-row INSERT of decodedEvents (fewer crossings into SQLite; under SQLite's 32766 bound parameters). */
const ROWS_PER_INSERT = 64;

/**
 * Events decoded elsewhere (an export file, a broker), written into a TEMP
 * work table in the journal's layout, so the same set-based appliers read
 * them. `columns`: the source table's columns, in order.
 */
export function decodedEvents(db: Db, columns: readonly string[], events: readonly ChangeEvent[]): EventRelation {
  const n = columns.length;
  const table = workTable(db, '_sluice_ev', `seq INTEGER PRIMARY KEY, op INTEGER NOT NULL, ts INTEGER, ${MASK_COLUMN}, ${imageColumns(n)}`);
  const head = `INSERT INTO ${table} (seq, op, ts, ${MASK_COLUMN}${Array.from({ length: 2 * n }, (_, i) => `, ${journalColumn(i)}`).join('')}) VALUES `;
  const tuple = (values: readonly (SqlValue | null)[]) => `(?, ?, ?, ?${values.map((v) => `, ${placeholderFor(v)}`).join('')})`;
  // Events without raw text (all but a UTF-16 source's lone surrogates) go
  // in multi-row statements, each row as wide as an update (an insert's
  // after-image and a delete's before-image in the first n, NULL after).
  const width = 4 + 2 * n;
  const perInsert = Math.max(1, Math.min(ROWS_PER_INSERT, Math.floor(32766 / width)));
  const plainTuple = tuple(Array.from({ length: 2 * n }, () => null));
  const plainFor = (rows: number) => cachedStatement(db, head + Array.from({ length: rows }, () => plainTuple).join(', '));
  let full: ReturnType<typeof plainFor> | undefined;
  const masks = new Map<string, ReturnType<typeof encodeMask>>();
  const maskOf = (changed: readonly string[] | undefined) => {
    if (changed === undefined) return null;
    const key = JSON.stringify(changed);
    let m = masks.get(key);
    if (m === undefined) masks.set(key, (m = encodeMask(columns, changed)));
    return m;
  };
  const params: unknown[] = [];
  let rows = 0;
  const values: SqlValue[] = [];
  const push = (row: Row | null) => {
    if (row !== null) for (const c of columns) values.push(storable(db, row[c] ?? null));
  };
  for (const e of events) {
    const op = e.op === 'insert' ? OP_INSERT : e.op === 'delete' ? OP_DELETE : OP_UPDATE;
    values.length = 0;
    if (e.op !== 'insert') push(e.before);
    if (e.op !== 'delete') push(e.after);
    const mask = e.op === 'update' ? maskOf(e.changed) : null;
    while (values.length < 2 * n) values.push(null);
    if (values.some(isRawText)) {
      cachedStatement(db, head + tuple(values)).run(e.seq, op, e.ts, mask, ...values.map(toBindable));
      continue;
    }
    params.push(e.seq, op, e.ts, mask);
    for (const v of values) params.push(toBindable(v));
    if (++rows === perInsert) {
      (full ??= plainFor(rows)).run(params);
      params.length = 0;
      rows = 0;
    }
  }
  if (rows > 0) plainFor(rows).run(params);
  return relation(`SELECT seq, op, ts, ${MASK_COLUMN}, ${imageColumns(n)} FROM ${table}`, {}, n);
}
