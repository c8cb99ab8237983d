import { expect } from 'vitest';
import { enable } from '../../../src/capture/index.ts';
import { CaptureRefusedError } from '../../../src/errors.ts';
import type { Db } from '../../../src/sqlite/index.ts';
import { databaseImage } from '../../support/journal.ts';

/**
 * enable(db, [table]), which must be refused (a CaptureRefusedError, returned
 * for its code and message) having written nothing: the file as `image`
 * sees it (by default its schema, rows and bytes) is as it was.
 */
export function enableRefused(
  db: Db,
  file: string,
  table: string,
  image: (db: Db, file: string) => unknown = databaseImage,
): CaptureRefusedError {
  const before = image(db, file);
  let caught: unknown;
  try {
    enable(db, [table]);
  } catch (e) {
    caught = e;
  }
  expect(caught).toBeInstanceOf(CaptureRefusedError);
  expect(image(db, file)).toEqual(before);
  return caught as CaptureRefusedError;
}
