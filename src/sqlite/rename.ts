import type { Db } from './connection.ts';
import { quoteIdent } from './quote.ts';

/**
 * Renames table `from` in `schema` to `to` without rewriting or checking the
 * views and triggers that name either (legacy_alter_table): a view a user
 * made over the old table of that name reads the new one, as after a
 * DROP and CREATE. The setting is restored.
 */
export function renameTable(db: Db, schema: string, from: string, to: string): void {
  const legacy = Number(db.pragma('legacy_alter_table', { simple: true }));
  if (legacy === 0) db.pragma('legacy_alter_table = ON');
  try {
    db.exec(`ALTER TABLE ${quoteIdent(schema)}.${quoteIdent(from)} RENAME TO ${quoteIdent(to)}`);
  } finally {
    if (legacy === 0) db.pragma('legacy_alter_table = OFF');
  }
}
