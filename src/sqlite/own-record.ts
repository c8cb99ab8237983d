import { z } from 'zod';

/*
 * Objects keyed by table and column names (a pipeline's capture map of
 * tables, a map projection's columns, a row of an export line or of an event,
 * an export's row counts per table) that keep every name, "__proto__"
 * included, as an own property. z.record leaves a "__proto__" key out of
 * what it returns (so that it cannot set the prototype of the object it
 * builds), and `obj[name] = value` on a plain object calls the prototype
 * setter for "__proto__" (a primitive is dropped, an object becomes the
 * prototype), so a table or column of that name was silently not there.
 * ownRecord reads the names as a Map (whose keys are only keys) and returns
 * an object holding each as its own property (Object.fromEntries), which
 * Object.entries and Object.keys list; setOwn sets one. The z.record it
 * stands for gives its JSON Schema (recordOf).
 */

const records = new WeakMap<z.ZodType, z.ZodType>();

/**
 * z.record(key, value), but a "__proto__" key is kept (as an own property), not dropped. `nonEmpty`: the
 * message that refuses an empty one (a refine of the result would be another schema, which recordOf does not know).
 */
export function ownRecord<V extends z.ZodType>(
  key: z.ZodType<string, string>,
  value: V,
  options: { readonly nonEmpty?: string } = {},
): z.ZodType<Record<string, z.output<V>>, Record<string, z.input<V>>> {
  const map = z.map(key, value);
  const { nonEmpty } = options;
  // A custom check first, not z.preprocess: its input would be optional, and the key holding it no longer required.
  const schema = z
    .custom<Record<string, unknown>>(isPlainObject, { error: (issue) => `expected an object of NAME: VALUE, not ${typeName(issue.input)}` })
    .transform((v) => new Map(Object.entries(v)))
    .pipe(nonEmpty === undefined ? map : map.refine((m) => m.size > 0, nonEmpty))
    .transform((m) => Object.fromEntries(m) as Record<string, z.output<V>>);
  records.set(schema, z.record(key, value));
  return schema as unknown as z.ZodType<Record<string, z.output<V>>, Record<string, z.input<V>>>;
}

/**
 * o[name] = value, as an own, enumerable property whatever the name ("__proto__" included: a plain assignment
 * would set the prototype). What builds a row or a count per table by name uses it, not `o[name] =`.
 */
export function setOwn<V>(o: Record<string, V>, name: string, value: V): void {
  if (name === '__proto__') Object.defineProperty(o, name, { value, writable: true, enumerable: true, configurable: true });
  else o[name] = value;
}

/** The z.record an ownRecord stands for (for its JSON Schema: scripts/pipeline-schema.ts), or undefined for any other schema. */
export function recordOf(schema: unknown): z.ZodType | undefined {
  return typeof schema === 'object' && schema !== null ? records.get(schema as z.ZodType) : undefined;
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null) return false;
  const proto = Object.getPrototypeOf(v) as unknown;
  return proto === Object.prototype || proto === null;
}

function typeName(v: unknown): string {
  return v === null ? 'null' : Array.isArray(v) ? 'a list' : typeof v === 'object' ? 'an object of another kind' : `a ${typeof v}`;
}
