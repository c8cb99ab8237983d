import type { DefinitionOf } from '../../kind.ts';
import { InvalidInputError } from '../../../errors.ts';

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
 * ctx.tables, as a handler gets it: the declared names (customTables), and
 * a name the definition does not declare refused at once with its fix. It
 * used to read as undefined, which reached Kysely as a table name and
 * failed far from the cause ("Cannot read properties of undefined").
 */
export function handlerTables(
  def: Pick<DefinitionOf<'custom'>, 'name' | 'target' | 'tables'>,
  at: string,
): Readonly<Record<string, string>> {
  const names = customTables(def, at);
  return new Proxy(names, {
    get(target, prop, receiver) {
      // (Symbols, the prototype's members, and what await and JSON.stringify look for, read as usual.)
      if (typeof prop !== 'string' || Reflect.has(target, prop) || prop === 'then' || prop === 'toJSON')
        return Reflect.get(target, prop, receiver) as unknown;
      throw undeclared(def, prop);
    },
  });
}

function undeclared(def: Pick<DefinitionOf<'custom'>, 'name' | 'tables'>, used: string): InvalidInputError {
  const declared = def.tables ?? [];
  const near = declared.find((n) => n.toLowerCase() === used.toLowerCase());
  const has = declared.length === 0 ? 'declares no "tables"' : `declares "tables": ${JSON.stringify(declared)}`;
  const fix =
    near === undefined
      ? `Add "${used}" to the definition's "tables" (sluice then owns it: it drops it on a rebuild and on drop), or use the name the handler declared`
      : `Use ctx.tables.${near}: ctx.tables holds the names as the definition spells them`;
  return new InvalidInputError(
    'CUSTOM_TABLE_UNDECLARED',
    `The handler of custom projection ${def.name} used ctx.tables.${used}, but the definition ${has}. ${fix}; then run sync again (nothing of this batch was committed).`,
  );
}
