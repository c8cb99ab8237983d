import type { Db } from '../../sqlite/index.ts';
import {
  collationSql,
  quoteIdent,
  cachedStatement,
  workTable,
  workTableName,
  primaryKeyCollations,
  fromDriver,
  fromJsonValue,
  placeholderFor,
  RawText,
  toBindable,
  toJsonValue,
  type SqlValue,
  hasUnpairedSurrogate,
  textFromDbBytes,
} from '../../sqlite/index.ts';
import type { CapturedTable } from '../../capture/index.ts';
import { journalEvents, journalBatch, sourceRows, batchEnd } from '../../feed/index.ts';
import { columnDecl, stagedCopyOf, type CompiledProjection, kindOf } from '../../projection/index.ts';
import { applyRows, type ApplyTarget, type Suspension } from '../projections/index.ts';
import { BUILD_CHUNK, type BuildState } from './shadow-build.ts';

/*
 * The bounded steps that fill a protected rebuild's tables (shadow-build.ts
 * says in which order): copying source rows in key-ordered chunks, reading
 * again the keys the journal touched, filling a replay kind's shadow from
 * its staged copy, and applying the journal's events to that shadow.
 */

/** The source columns, as a work table's column definitions (a chunk of rows in flight). */
function chunkTable(db: Db, p: CompiledProjection): { readonly table: string; readonly name: string } {
  const decl = p.source.columns.map((c) => `${quoteIdent(c.name)} ${columnDecl(c)}`).join(', ');
  const table = workTable(db, '_sluice_chunk', decl);
  cachedStatement(db, `DELETE FROM ${table}`).run();
  return { table, name: workTableName('_sluice_chunk', decl) };
}

/** The source key columns in the source's primary-key order and collations (a total order, the one chunks follow). */
function keyOrder(db: Db, p: CompiledProjection): string[] {
  const pk = primaryKeyCollations(db, p.source.table);
  return p.source.keyColumns.map((k) => `${quoteIdent(k)}${pk.has(k) ? ` COLLATE ${collationSql(pk.get(k) as string)}` : ''}`);
}

/**
 * Whether a staged copy of the source rows (a mirror, keyed by the key
 * columns with their own collations) can hold every row: not when the
 * primary key compares a column with another collation than the column's
 * (id COLLATE NOCASE, PRIMARY KEY (id COLLATE BINARY) holds 'a' and 'A').
 */
export function stagedCopyHolds(db: Db, p: CompiledProjection): boolean {
  const pk = primaryKeyCollations(db, p.source.table);
  return p.source.keyColumns.every((k) => {
    const own = p.source.columns.find((c) => c.name === k)?.collate ?? 'BINARY';
    return !pk.has(k) || (pk.get(k) as string).toUpperCase() === own.toUpperCase();
  });
}

/**
 * Moves the next BUILD_CHUNK rows of `from` (in key order, after `lastKey`)
 * into the chunk work table; how many, and the last key among them (undefined: that was the last chunk).
 */
function nextChunk(
  db: Db,
  p: CompiledProjection,
  from: string,
  lastKey: BuildState['lastKey'],
): { readonly chunk: { readonly table: string; readonly name: string }; readonly n: number; readonly lastKey: BuildState['lastKey'] } {
  const chunk = chunkTable(db, p);
  const keyed = keyOrder(db, p);
  const names = p.source.columns.map((c) => quoteIdent(c.name)).join(', ');
  const last = (lastKey ?? null)?.map((v) => fromJsonValue(v));
  const after = last === undefined ? '' : ` WHERE (${keyed.join(', ')}) > (${last.map(placeholderFor).join(', ')})`;
  const n = cachedStatement(
    db,
    `INSERT INTO ${chunk.table} (${names}) SELECT ${names} FROM ${from}${after} ORDER BY ${keyed.join(', ')} LIMIT ${BUILD_CHUNK}`,
  ).run(...(last ?? []).map(toBindable)).changes;
  if (n < BUILD_CHUNK) return { chunk, n, lastKey: undefined };
  return { chunk, n, lastKey: lastKeyOf(db, p, chunk.table, keyed).map((v) => toJsonValue(v)) };
}

/**
 * The chunk's last key, exact: a TEXT key read through the driver would
 * have its malformed UTF-8 (or, in a UTF-16 database, an unpaired
 * surrogate) replaced by U+FFFD, whose bytes sort elsewhere, so the next
 * chunk would skip or repeat rows. TEXT is read as its bytes instead. (The
 * greatest in every key column: DESC on each, not only on the last.)
 */
function lastKeyOf(db: Db, p: CompiledProjection, table: string, keyed: readonly string[]): SqlValue[] {
  return exactKey(db, p, `${table} ORDER BY ${keyed.map((k) => `${k} DESC`).join(', ')} LIMIT 1`, []) as SqlValue[];
}

/** The key of the first row `tail` (FROM ... LIMIT 1) selects, exact (see lastKeyOf); undefined: none. */
function exactKey(db: Db, p: CompiledProjection, tail: string, params: readonly unknown[]): SqlValue[] | undefined {
  const cols = p.source.keyColumns.map(quoteIdent);
  // (Cached, as every chunk asks: this SQL is exactKey's own, so the statement's safeIntegers is set for no one else.)
  const row = cachedStatement(
    db,
    `SELECT ${cols.map((k) => `${k}, CASE WHEN typeof(${k}) = 'text' THEN CAST(${k} AS BLOB) END`).join(', ')} FROM ${tail}`,
    'raw',
  )
    .safeIntegers(true)
    .get(...params) as unknown[] | undefined;
  if (row === undefined) return undefined;
  return cols.map((_, i) => {
    const bytes = row[2 * i + 1];
    if (!(bytes instanceof Uint8Array)) return fromDriver(row[2 * i] ?? null);
    const text = textFromDbBytes(db, bytes);
    // A string bound back is UTF-8 converted by the driver: exact unless it holds an unpaired surrogate
    // (only a UTF-16 database has those), which goes as the database's own bytes (CAST(? AS TEXT)).
    return typeof text === 'string' && hasUnpairedSurrogate(text) ? new RawText(Uint8Array.from(bytes)) : text;
  });
}

/** Builds the chunk's rows into `p`'s tables at `at`; how many rows it took. */
async function buildChunk(t: ApplyTarget, p: CompiledProjection, at: string, chunk: { readonly table: string; readonly name: string }) {
  const build = kindOf(p).build(t.db, t.schema, p, at);
  const rows = sourceRows(
    t.db,
    { name: chunk.name, columns: p.source.columns.map((c) => c.name), keyColumns: p.source.keyColumns },
    'temp',
  );
  await build.add({ from: (alias) => `${chunk.table} AS ${quoteIdent(alias)}`, rows: () => rows.rows() });
  return build.finish();
}

/** Copies the next chunk of source rows in key order into `copy` (the shadow, or a staged copy); the build state after it. */
export async function copyChunk(
  t: ApplyTarget,
  copy: { readonly p: CompiledProjection; readonly at: string },
  table: CapturedTable,
  b: BuildState,
): Promise<BuildState> {
  const p = copy.p;
  const chunk = keyChunk(
    t.db,
    p,
    table,
    (b.lastKey ?? null)?.map((v) => fromJsonValue(v)),
  );
  const build = kindOf(p).build(t.db, t.schema, p, copy.at);
  await build.add({
    from: chunk.from,
    rows: () => {
      throw new Error(`projection ${p.name}: a copy chunk is built in SQL (its kind reads no rows one by one)`);
    },
  });
  const copied = b.copied + (await build.finish());
  const hi = chunk.hi;
  return hi === undefined ? { ...b, lastKey: undefined, copied } : { ...b, lastKey: hi.map((v) => toJsonValue(v)), copied };
}

/**
 * The next BUILD_CHUNK rows of the source table after key `lo` (from the
 * first without it), in key order: a FROM item over them, and the last key
 * among them (undefined: these are the last rows). Straight from the source
 * table, between two keys (a key range its primary key seeks), with no work
 * table in between: a chunk is a slice of the snapshot being read. The FROM
 * item reads the bounds from a work table the next chunk overwrites: use it
 * before asking for the next one.
 */
export function keyChunk(
  db: Db,
  p: CompiledProjection,
  table: CapturedTable | { readonly at: string; readonly list: string },
  lo: readonly SqlValue[] | undefined,
): { readonly from: (alias: string) => string; readonly hi: SqlValue[] | undefined } {
  // The source table, or (`at`) a staged copy of it keyed alike (stagedCopyHolds), with the columns in `list`.
  const [src, list] = 'at' in table ? [table.at, table.list] : [`main.${quoteIdent(table.name)}`, capturedList(table)];
  const keyed = keyOrder(db, p);
  const after = lo === undefined ? '' : ` WHERE (${keyed.join(', ')}) > (${lo.map(placeholderFor).join(', ')})`;
  const params = (lo ?? []).map(toBindable);
  const hi = exactKey(db, p, `${src}${after} ORDER BY ${keyed.join(', ')} LIMIT 1 OFFSET ${BUILD_CHUNK - 1}`, params);
  // The bounds, bound exactly, in a work table the chunk's SELECT reads (a snapshot's FROM item takes no parameters).
  const k = p.source.keyColumns.map((_, i) => i);
  const bounds = workTable(db, '_sluice_bounds', [...k.map((i) => `lo${i}`), ...k.map((i) => `hi${i}`)].join(', '));
  cachedStatement(db, `DELETE FROM ${bounds}`).run();
  const values = [...k.map((i) => lo?.[i] ?? null), ...k.map((i) => hi?.[i] ?? null)];
  cachedStatement(db, `INSERT INTO ${bounds} VALUES (${values.map(placeholderFor).join(', ')})`).run(...values.map(toBindable));
  const where = [
    ...(lo === undefined ? [] : [`(${keyed.join(', ')}) > (SELECT ${k.map((i) => `lo${i}`).join(', ')} FROM ${bounds})`]),
    ...(hi === undefined ? [] : [`(${keyed.join(', ')}) <= (SELECT ${k.map((i) => `hi${i}`).join(', ')} FROM ${bounds})`]),
  ];
  return {
    from: (alias) => `(SELECT ${list} FROM ${src}${where.length === 0 ? '' : ` WHERE ${where.join(' AND ')}`}) AS ${quoteIdent(alias)}`,
    hi,
  };
}

/** Fills the next part of a replay kind's shadow from its staged copy, in key order; the build state after it. */
export async function fillChunk(t: ApplyTarget, p: CompiledProjection, b: BuildState): Promise<BuildState> {
  const fill = b.fill;
  if (b.staging === undefined || fill === undefined) throw new Error(`projection ${p.name}: no staged copy to fill its shadow from`);
  const staged = stagedCopyOf(p, b.staging);
  const at = `${quoteIdent(t.schema)}.${quoteIdent(b.staging)}`;
  if (p.kind !== 'custom') {
    // A kind that builds in SQL reads its part straight from the staged copy, between two keys (as copyChunk reads the source).
    const part = keyChunk(
      t.db,
      staged,
      { at, list: p.source.columns.map((c) => quoteIdent(c.name)).join(', ') },
      (fill.lastKey ?? null)?.map((v) => fromJsonValue(v)),
    );
    const build = kindOf(p).build(t.db, t.schema, p, b.shadow);
    await build.add({
      from: part.from,
      rows: () => {
        throw new Error(`projection ${p.name}: a ${p.kind} shadow is filled in SQL (its kind reads no rows one by one)`);
      },
    });
    await build.finish();
    const hi = part.hi;
    return { ...b, fill: hi === undefined ? { seq: fill.seq } : { seq: fill.seq, lastKey: hi.map((v) => toJsonValue(v)) } };
  }
  // A custom handler's init takes rows one by one: the part is moved into a work table they are read from in pages.
  const next = nextChunk(t.db, staged, at, fill.lastKey);
  await buildChunk(t, p, b.shadow, next.chunk);
  return { ...b, fill: next.lastKey === undefined ? { seq: fill.seq } : { seq: fill.seq, lastKey: next.lastKey } };
}

/**
 * Reads again from the source every key the journal touched in (lo, hi]
 * (old and new keys): deleted from the copy's rows at `at`, and built again
 * from the source rows that have it now.
 */
export async function catchUp(
  t: ApplyTarget,
  p: CompiledProjection,
  table: CapturedTable,
  at: string,
  lo: number,
  hi: number,
): Promise<void> {
  if (hi <= lo) return;
  const { db } = t;
  const kind = kindOf(p);
  const ev = journalEvents(db, table.tid, table.columns.length, lo, hi);
  const pos = p.source.keyColumns.map((k) => table.columns.indexOf(k));
  const tk = pos.map((_, i) => `k${i}`).join(', ');
  const touched = workTable(db, '_sluice_touched', tk);
  cachedStatement(db, `DELETE FROM ${touched}`).run();
  const k = (side: 'before' | 'after') => pos.map((x, i) => `${ev[side]('', x)} AS k${i}`).join(', ');
  cachedStatement(
    db,
    `INSERT INTO ${touched} SELECT ${k('before')} FROM (${ev.sql}) WHERE ${ev.hasBefore('')} UNION SELECT ${k('after')} FROM (${ev.sql}) WHERE ${ev.hasAfter('')}`,
  ).run(ev.params);
  const rows = kind.rowTable(at);
  if (rows === undefined) throw new Error(`projection ${p.name}: kind ${p.kind} has no row table to catch up`);
  db.exec(
    `DELETE FROM ${quoteIdent(t.schema)}.${quoteIdent(rows)} WHERE (${p.key.map(quoteIdent).join(', ')}) IN (SELECT ${tk} FROM ${touched})`,
  );
  const src = `main.${quoteIdent(table.name)}`;
  const keys = p.source.keyColumns.map(quoteIdent).join(', ');
  const build = kind.build(db, t.schema, p, at);
  await build.add({
    from: (alias) =>
      `(SELECT ${capturedList(table)} FROM ${src} WHERE (${keys}) IN (SELECT ${tk} FROM ${touched})) AS ${quoteIdent(alias)}`,
    rows: () => [],
  });
  await build.finish();
}

/** Events caught up per step of the catch-up phase: the next range, of at most BUILD_CHUNK events of the table. */
export function catchUpEnd(db: Db, table: CapturedTable, from: number, hw: number): number {
  return batchEnd(db, table.tid, from, hw, BUILD_CHUNK);
}

/**
 * Applies the journal's events of (lo, hi] to a replay kind's shadow, as
 * sync applies them to the live projection (the applier, at the shadow's
 * name). A suspension: the shadow does not hold what those events change
 * (it is not the source's rows at lo), and is to be discarded.
 */
export async function replayEvents(
  t: ApplyTarget,
  p: CompiledProjection,
  table: CapturedTable,
  shadow: string,
  lo: number,
  hi: number,
): Promise<Suspension | undefined> {
  if (hi <= lo) return undefined;
  const r = await applyRows(t, { ...p, targetTable: shadow }, journalBatch(t.db, table, lo, hi), 'batch');
  return r.kind === 'suspended' ? r : undefined;
}

/** What a read of captured table `t` selects: every column (`*`), or with columns left out of capture, the captured ones by name. */
function capturedList(t: CapturedTable): string {
  return t.excluded.length === 0 ? '*' : t.columns.map(quoteIdent).join(', ');
}
