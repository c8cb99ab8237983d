import { createHash } from 'node:crypto';
import { schemaFingerprint, type TableInfo, type UniqueIndexInfo } from '../sqlite/index.ts';

/**
 * What a table was armed against: its shape, plus its secondary UNIQUE
 * indexes (they decide which REPLACE guards the triggers carry, so adding
 * one must re-arm the table).
 */
export function captureFingerprint(info: TableInfo, uniques: readonly UniqueIndexInfo[]): string {
  if (uniques.length === 0) return schemaFingerprint(info);
  const u = JSON.stringify(uniques.map((x) => (x.partial ? { partial: x.columns } : x.columns)));
  return createHash('sha256')
    .update(`${schemaFingerprint(info)}|${u}`)
    .digest('hex')
    .slice(0, 16);
}
