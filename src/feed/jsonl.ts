import { z } from 'zod';
import { fromJsonValue, jsonValueSchema, ownRecord, setOwn, toJsonValue, type SqlValue } from '../sqlite/index.ts';
import type { ChangeEvent, Row } from './events.ts';

/** One event line of `sluice changes` and `sluice export` (docs/jsonl.md). */
export const eventLineSchema = z.strictObject({
  sourceId: z.string(),
  seq: z.number().int().positive(),
  table: z.string(),
  op: z.enum(['insert', 'update', 'delete']),
  key: z.array(jsonValueSchema),
  beforeKey: z.array(jsonValueSchema).optional(),
  // ownRecord: a column named __proto__ is kept (z.record drops it).
  before: ownRecord(z.string(), jsonValueSchema).nullable(),
  after: ownRecord(z.string(), jsonValueSchema).nullable(),
  image: z.enum(['full', 'key']),
  ts: z.number().int(),
  /**
   * Updates only, since export line format 3: the columns the write changed,
   * in table order. Absent: not known, every column changed (a line of an
   * older sluice, or an event journaled before capture format 3).
   */
  changed: z.array(z.string()).optional(),
});
export type EventLine = z.infer<typeof eventLineSchema>;

/** The last line of `sluice changes`: where to continue with --since. */
export const cursorLineSchema = z.strictObject({ cursor: z.string() });

function rowJson(row: Row | null): Record<string, z.infer<typeof jsonValueSchema>> | null {
  if (row === null) return null;
  const out: Record<string, z.infer<typeof jsonValueSchema>> = {};
  for (const [k, v] of Object.entries(row)) setOwn(out, k, toJsonValue(v));
  return out;
}

export function eventToLine(sourceId: string, e: ChangeEvent): EventLine {
  return {
    sourceId,
    seq: e.seq,
    table: e.table,
    op: e.op,
    key: e.key.map((v: SqlValue) => toJsonValue(v)),
    ...(e.op === 'update' ? { beforeKey: e.beforeKey.map((v) => toJsonValue(v)) } : {}),
    before: rowJson(e.before),
    after: rowJson(e.after),
    image: e.image,
    ts: e.ts,
    ...(e.op === 'update' && e.changed !== undefined ? { changed: [...e.changed] } : {}),
  };
}

/** A row of a line, decoded (the inverse of the encoding above). */
export function lineToRow(r: Readonly<Record<string, unknown>>): Row {
  const out: Record<string, SqlValue> = {};
  for (const k of Object.keys(r)) setOwn(out, k, fromJsonValue(r[k]));
  return out;
}

/** An event line, decoded: the inverse of eventToLine. (Import decodes every event with it: one object per event, no spread.) */
export function lineToEvent(l: EventLine): ChangeEvent {
  const key = l.key.map(fromJsonValue);
  const { seq, table, ts, image } = l;
  if (l.op === 'insert')
    return { seq, table, key, ts, image, op: 'insert', before: null, after: l.after === null ? null : lineToRow(l.after) };
  const before = l.before === null ? null : lineToRow(l.before);
  if (l.op === 'delete') return { seq, table, key, ts, image, op: 'delete', before, after: null };
  const after = l.after === null ? null : lineToRow(l.after);
  const beforeKey = (l.beforeKey ?? l.key).map(fromJsonValue);
  if (l.changed === undefined) return { seq, table, key, ts, image, op: 'update', before, after, beforeKey };
  return { seq, table, key, ts, image, op: 'update', before, after, beforeKey, changed: l.changed };
}
