import type { DefinitionOf } from '../../kind.ts';

/**
 * Where the tables a custom definition declares ("tables") are when its
 * main table is `at`: their own names when `at` is its target (its label),
 * else `<at>__<name>` (a shadow being built beside them).
 */
export function customTables(def: Pick<DefinitionOf<'custom'>, 'name' | 'target' | 'tables'>, at: string): Record<string, string> {
  const live = def.target ?? def.name;
  return Object.fromEntries((def.tables ?? []).map((n) => [n, at === live ? n : `${at}__${n}`]));
}
