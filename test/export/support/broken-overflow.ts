import fs from 'node:fs';
import path from 'node:path';
import { createHash } from 'node:crypto';
import { expect } from 'vitest';
import { runPython } from '../../support/fixtures.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';

/** Another program's edit of a segment's digest (argv[2]) in its `segment` table (argv[1] the file). */
const SET_DIGEST = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("UPDATE segment SET value = ? WHERE name = 'digest'", (sys.argv[2],))
con.commit()
con.close()
`;

/**
 * `good` (a segment's bytes) written to `<tmp>/<name>.segment` with the link
 * of its first linked overflow page pointed past the end, and its digest
 * made again: it passes every check, and SQLite fails only when the value
 * is read. Returns the file and its bytes.
 */
export function brokenOverflow(tmp: string, good: Buffer, name: string): { file: string; bytes: Buffer } {
  const file = path.join(tmp, `${name}.segment`);
  fs.writeFileSync(file, good);
  const db = openDatabase(file, { readonly: true });
  let overflow: number[];
  let meta: Set<number>;
  try {
    overflow = db.prepare("SELECT pageno FROM dbstat WHERE pagetype = 'overflow' ORDER BY pageno").pluck().all() as number[];
    meta = new Set((db.prepare("SELECT pageno FROM dbstat WHERE name = 'segment'").pluck().all() as number[]).map(Number));
  } finally {
    db.close();
  }
  const bytes = Buffer.from(good);
  const size = bytes.readUInt16BE(16);
  const page = overflow.map(Number).find((p) => bytes.readUInt32BE((p - 1) * size) !== 0);
  expect(page).toBeDefined();
  bytes.writeUInt32BE(0x7fffff, ((page as number) - 1) * size);
  const h = createHash('sha256');
  for (let p = 2; p <= bytes.length / size; p++) if (!meta.has(p)) h.update(bytes.subarray((p - 1) * size, p * size));
  fs.writeFileSync(file, bytes);
  runPython(SET_DIGEST, [file, h.digest('hex')]);
  return { file, bytes: fs.readFileSync(file) };
}
