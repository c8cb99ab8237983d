import type { Db } from '../../../sqlite/index.ts';
import {
  cachedStatement,
  type RowMode,
  namedPlaceholderFor,
  placeholderFor,
  toBindable,
  toJsonValue,
  type SqlValue,
  type JsonValue,
} from '../../../sqlite/index.ts';
import type { ChangeEvent, Row } from '../../../feed/index.ts';
import type { CompiledFts5 } from '../../compiled.ts';
import { ftsNames } from './layout.ts';
import { allOf, sqlEq } from '../relational/images.ts';
import type { Reason } from '../../../reasons.ts';

/*
 * An incremental FTS5 index keyed by the source key. A content table
 * `<target>_src` maps each key to the FTS rowid (the key itself when the
 * source has an INTEGER PRIMARY KEY) and, for `content: external`, keeps the
 * indexed values, which FTS5 reads for snippet() and highlight(). Old index
 * entries are removed with FTS5's 'delete' command and the event's
 * before-image, after checking it against what is stored.
 */

interface FtsMismatch {
  readonly seq: number;
  readonly key: readonly JsonValue[];
  readonly reason: Reason<'TARGET_DIVERGED' | 'UNCAPTURED_REPLACE'>;
}

/** Applies events in order inside the caller's transaction; returns the first mismatch, if any, before writing it. */
export function applyFtsEvents(
  db: Db,
  schema: string,
  p: CompiledFts5,
  events: readonly ChangeEvent[],
  /** Whether an event may change the index (ChangeBatch.writes): one that may not is checked, not written. */
  writes: (e: ChangeEvent) => boolean = () => true,
): { applied: number; mismatch?: FtsMismatch } {
  const n = ftsNames(schema, p);
  // Compiled once per connection (statement-cache.ts): the SQL of a step
  // differs only by the placeholders of its values' storage classes, so a
  // handful of texts cover every batch (compiling each event's statements
  // cost most of the time).
  const prepare = (sql: string, mode?: RowMode) => cachedStatement(db, sql, mode);
  const keyOf = (row: Row) => p.key.map((k) => row[k] ?? null);
  const valuesOf = (row: Row) => p.columns.map((c) => row[c.from ?? c.name] ?? null);
  const ph = (vals: readonly SqlValue[]) => vals.map(placeholderFor).join(', ');
  const bind = (vals: readonly SqlValue[]) => vals.map(toBindable);
  const lookup = (key: readonly SqlValue[]) =>
    prepare(
      `SELECT rowid FROM ${n.content} WHERE ${n.keys.map((k, i) => `${k} = ${placeholderFor(key[i] ?? null)}`).join(' AND ')}`,
      'pluck',
    ).get(...bind(key)) as bigint | undefined;
  // The row found by key (through its collation) must hold the before-image's key bytes, and its values when stored.
  const matches = (rowid: bigint, key: readonly SqlValue[], values: readonly SqlValue[]) => {
    const stored = n.external ? values : [];
    const eq = [
      ...n.keys.map((c, i) => sqlEq(c, namedPlaceholderFor(key[i] ?? null, `k${i}`))),
      ...n.cols.slice(0, stored.length).map((c, i) => sqlEq(c, namedPlaceholderFor(stored[i] ?? null, `v${i}`))),
    ];
    const args = {
      rowid,
      ...Object.fromEntries(key.map((v, i) => [`k${i}`, toBindable(v)])),
      ...Object.fromEntries(stored.map((v, i) => [`v${i}`, toBindable(v)])),
    };
    return prepare(`SELECT 1 FROM ${n.content} WHERE rowid = @rowid AND ${allOf(eq)}`).get(args) !== undefined;
  };

  const remove = (e: ChangeEvent, row: Row, write = true): FtsMismatch | undefined => {
    const key = keyOf(row);
    const rowid = lookup(key);
    const values = valuesOf(row);
    if (rowid === undefined || !matches(rowid, key, values)) return { seq: e.seq, key: key.map(toJsonValue), reason: 'TARGET_DIVERGED' };
    if (!write) return undefined;
    prepare(`INSERT INTO ${n.fts} (${n.cmd}, rowid, ${n.cols.join(', ')}) VALUES ('delete', ?, ${ph(values)})`).run(rowid, ...bind(values));
    prepare(`DELETE FROM ${n.content} WHERE rowid = ?`).run(rowid);
    return undefined;
  };
  const add = (e: ChangeEvent, row: Row): FtsMismatch | undefined => {
    const key = keyOf(row);
    if (lookup(key) !== undefined) return { seq: e.seq, key: key.map(toJsonValue), reason: 'UNCAPTURED_REPLACE' };
    const values = valuesOf(row);
    const rowidCol = n.intKey ? 'rowid, ' : '';
    const rowidVal = n.intKey ? [key[0] ?? null] : [];
    const valueCols = n.external ? `, ${n.cols.join(', ')}` : '';
    const stored = n.external ? values : [];
    const info = prepare(
      `INSERT INTO ${n.content} (${rowidCol}${n.keys.join(', ')}${valueCols}) VALUES (${ph([...rowidVal, ...key, ...stored])})`,
    ).run(...bind([...rowidVal, ...key, ...stored]));
    prepare(`INSERT INTO ${n.fts} (rowid, ${n.cols.join(', ')}) VALUES (?, ${ph(values)})`).run(info.lastInsertRowid, ...bind(values));
    return undefined;
  };

  let applied = 0;
  for (const e of events) {
    if (e.image !== 'full') throw new Error(`fts5 projection ${p.name} needs images mode on ${p.source.table}`);
    // An update of columns the index does not read leaves its entries as they are: its before-image is checked, nothing is written.
    const write = writes(e);
    const miss = (e.before !== null ? remove(e, e.before, write) : undefined) ?? (e.after !== null && write ? add(e, e.after) : undefined);
    if (miss !== undefined) return { applied, mismatch: miss };
    applied++;
  }
  return { applied };
}
