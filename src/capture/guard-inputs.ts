import type { Db } from '../sqlite/index.ts';
import { primaryKeyCollations, uniqueIndexes } from '../sqlite/index.ts';
import type { GuardInputs } from './triggers.ts';

/** What a table's REPLACE guards are built from, read from its schema (arming and verification read it the same way). */
export function guardInputs(db: Db, table: string): GuardInputs {
  return { uniques: uniqueIndexes(db, table), keyCollations: primaryKeyCollations(db, table) };
}
