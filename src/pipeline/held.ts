import { openDatabase } from '../sqlite/index.ts';
import { readProjections } from '../apply/target/index.ts';
import { readProjectionSet } from '../apply/projections/index.ts';

/** The stored records of the projections a target holds, read over a connection of their own (read-only). */
export function heldProjections(target: string): ReturnType<typeof readProjections> {
  const db = openDatabase(target, { readonly: true, role: 'target' });
  try {
    return readProjections(db, 'main');
  } finally {
    db.close();
  }
}

/** Whether target `target` holds "*" in its projection set (stored, or inferred for a target from before the set), read-only. */
export function holdsMirrorAll(target: string): boolean {
  const db = openDatabase(target, { readonly: true, role: 'target' });
  try {
    return readProjectionSet(db, 'main', readProjections(db, 'main')).mirrorAll !== undefined;
  } finally {
    db.close();
  }
}
