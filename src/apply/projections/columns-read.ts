import type { CompiledProjection } from '../../projection/index.ts';
import { compileStored, readsColumn } from '../../projection/index.ts';
import type { ProjectionRecord } from '../target/index.ts';

/**
 * The source columns a projection reads, for the cursor check
 * (validateCursor's `reads`): what `next` reads, or what the stored
 * definition reads (both, when both compile); every column when neither does.
 */
export function columnsRead(
  rec: Pick<ProjectionRecord, 'name' | 'definition' | 'sourceShape'> | undefined,
  next?: CompiledProjection,
): (table: string, column: string) => boolean {
  const stored = rec === undefined ? undefined : compileStored(rec);
  const readers = [next, stored].filter((p) => p !== undefined);
  return (_table, column) => readers.length === 0 || readers.some((p) => readsColumn(p, column));
}
