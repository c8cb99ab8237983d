/*
 * What freeing the old table of a protected rebuild costs, one way or the
 * other (the swap drops it: src/apply/rebuild/shadow-build.ts atomicSwapShadow):
 * one DROP TABLE, against DELETEs of BUILD_CHUNK rows per transaction (by
 * rowid range, and by rowid IN (...)) followed by the DROP of the empty
 * table. The longest transaction is what a writer waiting for the target
 * waits at most. Bench only: nothing asserts on time.
 *
 *   npx tsx bench/free-old-table.ts [--rows N (1000000)]
 */
import path from 'node:path';
import { openDatabase } from '../src/sqlite/connection.ts';
import { BUILD_CHUNK } from '../src/apply/rebuild/shadow-build.ts';
import { fmtMs, intFlag, makeScratch, renderTable } from './lib/workload.ts';

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write('usage: npx tsx bench/free-old-table.ts [--rows N (1000000)]\n');
  process.exit(0);
}
const ROWS = intFlag(argv, 'rows', 1_000_000);
const { dir, cleanup } = makeScratch('sluice-bench-free-');
const rows: string[][] = [];
for (const mode of ['drop', 'delete by rowid range', 'delete rowid IN (...)'] as const) {
  const db = openDatabase(path.join(dir, `${mode.replace(/\W+/g, '-')}.db`), { create: true, wal: true });
  db.pragma('synchronous = NORMAL');
  db.exec(`CREATE TABLE x (id INTEGER PRIMARY KEY, name TEXT, tag TEXT);
    WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO x SELECT i, 'row ' || i, 'v1:' || (i % 97) FROM c`);
  db.pragma('wal_checkpoint(TRUNCATE)');
  const times: number[] = [];
  const timed = (sql: string): number => {
    const t0 = performance.now();
    db.exec('BEGIN');
    const n = db.prepare(sql).run().changes;
    db.exec('COMMIT');
    times.push(performance.now() - t0);
    return n;
  };
  if (mode !== 'drop') {
    const del =
      mode === 'delete by rowid range'
        ? `DELETE FROM x WHERE id <= (SELECT id FROM x ORDER BY id LIMIT 1 OFFSET ${BUILD_CHUNK - 1})`
        : `DELETE FROM x WHERE rowid IN (SELECT rowid FROM x LIMIT ${BUILD_CHUNK})`;
    while (timed(del) === BUILD_CHUNK) continue;
  }
  timed('DROP TABLE x');
  db.close();
  rows.push([mode, String(times.length), fmtMs(Math.max(...times)), fmtMs(times.reduce((a, b) => a + b, 0))]);
}
cleanup();
process.stdout.write(`freeing a ${ROWS}-row table\n\n${renderTable(['way', 'transactions', 'longest', 'total'], rows)}\n`);
