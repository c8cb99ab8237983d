import { openDatabase } from '../sqlite/index.ts';
import { readProjections } from '../apply/target/index.ts';

/** The stored records of the projections a target holds, read over a connection of their own (read-only). */
export function heldProjections(target: string): ReturnType<typeof readProjections> {
  const db = openDatabase(target, { readonly: true, role: 'target' });
  try {
    return readProjections(db, 'main');
  } finally {
    db.close();
  }
}
