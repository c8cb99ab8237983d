/*
 * What the reader pays for each way of keeping a table's last seq (bench only).
 * The writer-side cost of each is in bench/journal-shapes.ts and
 * bench/shape-instructions.ts; this is the other half of the trade.
 *
 *   npx tsx bench/last-seq-readers.ts [--events 300000] [--iterations 2000]
 *
 * Builds a journal of `events` events spread over three captured tables
 * (a, b, c interleaved), then times, per query, the median over `iterations`:
 * - src today: max(last_seq) from _sluice_tables (what src/feed/changed-since.ts runs);
 * - an index on _sluice_journal(tid): max(seq) for one tid;
 * - no writer-side state: the tail scan `SELECT tid, max(seq) ... WHERE seq > S GROUP BY tid`
 *   over the K newest events (what an incremental per-process cache pays per poll);
 * - no writer-side state: the newest event of one table, found scanning back
 *   over the events of the others (table c is quiet for the last 100k events).
 */
import { performance } from 'node:perf_hooks';
import { enable } from '../src/capture/enable.ts';
import { fmtMs, freshDb, intFlag, makeScratch, median, renderTable } from './lib/workload.ts';

const argv = process.argv.slice(2);
const events = intFlag(argv, 'events', 300_000);
const iterations = intFlag(argv, 'iterations', 2000);

const { dir, cleanup } = makeScratch('sluice-lastseq-');
try {
  const { db, dispose } = freshDb(dir, (d) => {
    for (const n of ['a', 'b', 'c']) d.exec(`CREATE TABLE ${n} (id INTEGER PRIMARY KEY, v)`);
    enable(d, ['a', 'b', 'c']);
  });
  const ins = ['a', 'b', 'c'].map((n) => db.prepare(`INSERT INTO ${n} (id, v) VALUES (?, ?)`));
  db.exec('BEGIN');
  // a, b, c interleaved, except that table c stops writing `quiet` events before the end.
  const quiet = Math.min(100_000, Math.floor(events / 3));
  for (let i = 0; i < events; i++) {
    const k = i % 3;
    if (k === 2 && i >= events - quiet) ins[0]?.run(i + 1_000_000_000, i);
    else ins[k]?.run(i + 1, i);
  }
  db.exec('COMMIT');
  db.exec('CREATE INDEX _bench_journal_tid ON _sluice_journal(tid)');
  const hw = Number((db.prepare('SELECT max(seq) AS m FROM _sluice_journal').get() as { m: bigint }).m);

  const time = (fn: () => unknown): number => {
    const xs: number[] = [];
    for (let i = 0; i < iterations; i++) {
      const t0 = performance.now();
      fn();
      xs.push((performance.now() - t0) * 1000);
    }
    return median(xs);
  };
  const rows: string[][] = [];
  const src = db.prepare('SELECT max(last_seq) AS m FROM main._sluice_tables WHERE name IN (SELECT value FROM json_each(?))').pluck();
  rows.push(['_sluice_tables.last_seq (src), tables a,b', fmtMs(time(() => src.get('["a","b"]')))]);
  const byIndex = db.prepare('SELECT max(seq) FROM main._sluice_journal WHERE tid = ?').pluck();
  rows.push(['index on journal(tid): max(seq) for tid 1', fmtMs(time(() => byIndex.get(1)))]);
  rows.push(['index on journal(tid): max(seq) for tids 1,2', fmtMs(time(() => [byIndex.get(1), byIndex.get(2)]))]);
  const tail = db.prepare('SELECT tid, max(seq) AS m FROM main._sluice_journal NOT INDEXED WHERE seq > ? GROUP BY tid');
  for (const k of [0, 10, 100, 1000, 10_000, 100_000].filter((x) => x < events))
    rows.push([`tail scan of the ${k} newest events`, fmtMs(time(() => tail.all(hw - k)))]);
  const back = db.prepare('SELECT seq FROM main._sluice_journal NOT INDEXED WHERE tid = ? ORDER BY seq DESC LIMIT 1').pluck();
  rows.push(['newest event of tid 1 (scan back ~1 event)', fmtMs(time(() => back.get(1)))]);
  rows.push([`newest event of tid 3 (scan back ~${quiet} events)`, fmtMs(time(() => back.get(3)))]);
  console.log(`reader cost of a per-table last seq: ${events} events in three tables; median µs over ${iterations} runs`);
  console.log(renderTable(['query', 'µs'], rows));
  dispose();
} finally {
  cleanup();
}
