/*
 * A quick check of the two lines an export file is made of (event lines and
 * snapshot row lines), for import (bench/import.ts: the schemas' unions
 * were most of its per-line cost). It accepts only lines the schemas accept
 * (format.ts, feed/jsonl.ts), and only in their common forms: values that
 * are null, text, a safe integer or {"$f": a finite number}. Anything else,
 * valid or not, is left to the schema, which then gives the same result and
 * the same message as without this check.
 */

function plainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v) && Object.getPrototypeOf(v) === Object.prototype;
}

function simpleValue(v: unknown): boolean {
  if (v === null || typeof v === 'string') return true;
  if (typeof v === 'number') return Number.isSafeInteger(v);
  if (!plainObject(v)) return false;
  const f = v.$f;
  return typeof f === 'number' && Number.isFinite(f) && Object.keys(v).length === 1 && Object.hasOwn(v, '$f');
}

function simpleRow(v: unknown): boolean {
  if (!plainObject(v)) return false;
  for (const k of Object.keys(v)) if (k === '__proto__' || !simpleValue(v[k])) return false;
  return true;
}

function simpleKey(v: unknown): boolean {
  return Array.isArray(v) && v.every(simpleValue);
}

const seqOf = (v: unknown, min: number) => typeof v === 'number' && Number.isSafeInteger(v) && v >= min;

function only(o: Record<string, unknown>, keys: ReadonlySet<string>, required: number): boolean {
  const own = Object.keys(o);
  return own.length >= required && own.length <= keys.size && own.every((k) => keys.has(k));
}

const EVENT_KEYS = new Set(['sourceId', 'seq', 'table', 'op', 'key', 'beforeKey', 'before', 'after', 'image', 'ts', 'changed']);
/** The keys an event line may leave out. */
const OPTIONAL_EVENT_KEYS = ['beforeKey', 'changed'] as const;
const ROW_KEYS = new Set(['type', 'sourceId', 'seq', 'table', 'row']);

/** Whether `json` is an event line that eventLineSchema accepts as it is. */
export function isSimpleEventLine(json: unknown): boolean {
  if (!plainObject(json)) return false;
  const required = EVENT_KEYS.size - OPTIONAL_EVENT_KEYS.filter((k) => !Object.hasOwn(json, k)).length;
  if (!only(json, EVENT_KEYS, required)) return false;
  const { sourceId, seq, table, op, key, beforeKey, before, after, image, ts, changed } = json;
  return (
    typeof sourceId === 'string' &&
    seqOf(seq, 1) &&
    typeof table === 'string' &&
    (op === 'insert' || op === 'update' || op === 'delete') &&
    simpleKey(key) &&
    (beforeKey === undefined ? !Object.hasOwn(json, 'beforeKey') : simpleKey(beforeKey)) &&
    (before === null || simpleRow(before)) &&
    (after === null || simpleRow(after)) &&
    (image === 'full' || image === 'key') &&
    typeof ts === 'number' &&
    Number.isSafeInteger(ts) &&
    (changed === undefined ? !Object.hasOwn(json, 'changed') : Array.isArray(changed) && changed.every((c) => typeof c === 'string'))
  );
}

/** Whether `json` is a snapshot row line that rowLineSchema accepts as it is. */
export function isSimpleRowLine(json: unknown): boolean {
  if (!plainObject(json) || !only(json, ROW_KEYS, ROW_KEYS.size)) return false;
  return (
    json.type === 'row' && typeof json.sourceId === 'string' && seqOf(json.seq, 0) && typeof json.table === 'string' && simpleRow(json.row)
  );
}
