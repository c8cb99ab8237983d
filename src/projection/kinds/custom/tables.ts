import type { DefinitionOf } from '../../kind.ts';
import { InvalidInputError, SluiceError } from '../../../errors.ts';
import { setOwn } from '../../../sqlite/index.ts';

/**
 * Where the tables a custom definition declares ("tables") are when its
 * main table is `at`: their own names when `at` is its target (its label),
 * else `<at>__<name>` (a shadow being built beside them).
 */
export function customTables(def: Pick<DefinitionOf<'custom'>, 'name' | 'target' | 'tables'>, at: string): Record<string, string> {
  const live = def.target ?? def.name;
  return Object.fromEntries((def.tables ?? []).map((n) => [n, at === live ? n : `${at}__${n}`]));
}

/**
 * ctx.tables, as a handler gets it: the declared names (customTables) as a
 * plain object's own properties (it is cloned, spread and posted to a
 * worker as before), over a prototype that notes each other name read. A
 * name read that the definition does not declare reads as undefined, as it
 * did; when the handler then fails, `failure` gives CUSTOM_TABLE_UNDECLARED
 * naming it and the fix (undefined used as a table name used to fail inside
 * Kysely, "Cannot read properties of undefined"). A handler that only looks
 * (`tables.audit ?? 'audit'`, a library probing `length`) and goes on is
 * left alone.
 */
export function handlerTables(
  def: Pick<DefinitionOf<'custom'>, 'name' | 'target' | 'tables'>,
  at: string,
): { readonly tables: Readonly<Record<string, string>>; failure(err: unknown): unknown } {
  const read = new Set<string>();
  const noting = new Proxy(Object.prototype, {
    get(target, prop, receiver) {
      if (typeof prop === 'string' && !Reflect.has(target, prop)) read.add(prop);
      return Reflect.get(target, prop, receiver) as unknown;
    },
  });
  // Each as its own property (setOwn: Object.assign would hand a table named __proto__ to the prototype's setter).
  const tables = Object.create(noting) as Record<string, string>;
  for (const [name, table] of Object.entries(customTables(def, at))) setOwn(tables, name, table);
  return {
    tables,
    failure: (err) => {
      // (What await and JSON.stringify look for are no table names.)
      const used = [...read].filter((n) => n !== 'then' && n !== 'toJSON');
      return used.length === 0 || err instanceof SluiceError ? err : undeclared(def, used, err);
    },
  };
}

function undeclared(def: Pick<DefinitionOf<'custom'>, 'name' | 'tables'>, used: readonly string[], err: unknown): InvalidInputError {
  const declared = def.tables ?? [];
  const names = used.map((n) => `ctx.tables.${n}`).join(', ');
  const near = used.map((u) => declared.find((n) => n.toLowerCase() === u.toLowerCase())).find((n) => n !== undefined);
  const has = declared.length === 0 ? 'declares no "tables"' : `declares "tables": ${JSON.stringify(declared)}`;
  const fix =
    near === undefined
      ? `Add "${used[0]}" to the definition's "tables" (sluice then owns it: it drops it on a rebuild and on drop), or use a name it declares`
      : `Use ctx.tables.${near}: ctx.tables holds the names as the definition spells them`;
  const why = err instanceof Error ? err.message : String(err);
  return new InvalidInputError(
    'CUSTOM_TABLE_UNDECLARED',
    `The handler of custom projection ${def.name} failed (${why}) after reading ${names}, which the definition does not declare: it ${has}, and ctx.tables holds only those (an undeclared name reads as undefined). ${fix}; then run sync again (nothing of this batch was committed).`,
    { cause: err },
  );
}
