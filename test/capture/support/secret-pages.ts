import fs from 'node:fs';
import { openDatabase } from '../../../src/sqlite/index.ts';

/*
 * Where a secret's bytes are in a database's files, page by page: the
 * pages a set of b-trees hold now (by dbstat, not the whole file, since the
 * captured table holds the secret legitimately), read from the database
 * file and from every frame of its -wal that carries one of those page
 * numbers (older images of the same pages included).
 */

/** The page numbers of the b-trees (tables and their indexes) whose name `where` matches, as dbstat lists them. */
export function btreePages(file: string, where: string): Set<number> {
  const db = openDatabase(file, { readonly: true });
  try {
    return new Set((db.prepare(`SELECT DISTINCT pageno FROM dbstat WHERE ${where}`).pluck().all() as (number | bigint)[]).map(Number));
  } finally {
    db.close();
  }
}

/** The pages of sluice's own tables and their indexes. */
export const OWN_BTREES = "name LIKE '\\_sluice\\_%' ESCAPE '\\' OR name LIKE 'sqlite\\_autoindex\\_\\_sluice\\_%' ESCAPE '\\'";

/** Each image of `pages` in the file and its -wal: `{where, page, bytes}`. */
export function pageImages(file: string, pages: ReadonlySet<number>): { where: string; page: number; bytes: Buffer }[] {
  const out: { where: string; page: number; bytes: Buffer }[] = [];
  const main = fs.readFileSync(file);
  const pageSize = main.readUInt16BE(16) === 1 ? 65536 : main.readUInt16BE(16);
  for (const p of pages) {
    const at = (p - 1) * pageSize;
    if (at + pageSize <= main.length) out.push({ where: 'file', page: p, bytes: main.subarray(at, at + pageSize) });
  }
  const walFile = `${file}-wal`;
  if (fs.existsSync(walFile)) {
    const wal = fs.readFileSync(walFile);
    for (let at = 32, frame = 1; at + 24 + pageSize <= wal.length; at += 24 + pageSize, frame++) {
      const p = wal.readUInt32BE(at);
      if (pages.has(p)) out.push({ where: `wal frame ${frame}`, page: p, bytes: wal.subarray(at + 24, at + 24 + pageSize) });
    }
  }
  return out;
}

/** Where in `images` any of `needles` is: `"wal frame 3, page 5: S3CR3T"`, one line each. */
export function findIn(images: readonly { where: string; page: number; bytes: Buffer }[], needles: readonly Buffer[]): string[] {
  return images.flatMap((img) =>
    needles.filter((n) => img.bytes.includes(n)).map((n) => `${img.where}, page ${img.page}: ${n.toString('latin1')}`),
  );
}

/** The forms a secret can take in text output: its bytes, and a BLOB's hex and base64. */
export function textForms(secret: Buffer): string[] {
  return [secret.toString('latin1'), secret.toString('hex'), secret.toString('hex').toUpperCase(), secret.toString('base64')];
}
