// The peak-RSS child of bench/feed.ts: a snapshot then a catch-up through
// the library, on the compiled modules in dist/ (as the CLI and a program
// using the package run them), in plain node. Run under tsx, its loader's
// own thread and heap took about 120 MB of the figure (247 MB measured,
// 128 MB of it sluice's). The report builds dist/ first (bench/report.ts);
// run alone, `npm run build` first.
//
//   node bench/lib/rss-child.js SOURCE TARGET
// prints one JSON line: { startMb, peakMb, snapshotRows, catchUpEvents, ms }.
import fs from 'node:fs';
import { performance } from 'node:perf_hooks';

const dist = new URL('../../dist/src/', import.meta.url);
if (!fs.existsSync(new URL('sqlite/index.js', dist))) {
  process.stderr.write('bench/lib/rss-child.js runs the compiled modules: run `npm run build` first (dist/ is missing)\n');
  process.exit(1);
}
const { openDatabase, toBindable } = await import(new URL('sqlite/index.js', dist).href);
const { snapshot, readBatch, journalStartCursor } = await import(new URL('feed/index.js', dist).href);

const DDL = 'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER, r REAL, b BLOB)';
const INSERT = 'INSERT INTO t (id, name, n, r, b) VALUES (?, ?, ?, ?, ?)';
const UPSERT = 'INSERT OR REPLACE INTO t (id, name, n, r, b) VALUES (?, ?, ?, ?, ?)';
const SAMPLE_EVERY = 1000;

const [source, target] = process.argv.slice(2);
const mb = (b) => b / (1024 * 1024);
const startMb = mb(process.memoryUsage.rss());
let peak = process.memoryUsage.rss();
const sample = () => {
  const r = process.memoryUsage.rss();
  if (r > peak) peak = r;
};
const t0 = performance.now();
const src = openDatabase(source, { readonly: true });
const db = openDatabase(target, { create: true, role: 'target', wal: true });
db.exec(DDL);
const ins = db.prepare(INSERT);
let rows = 0;
const snap = db.transaction(() =>
  snapshot(src, ['t'], {
    onRow: (_t, row) => {
      ins.run(row.map(toBindable));
      if (++rows % SAMPLE_EVERY === 0) sample();
    },
  }),
)();
sample();
// Catch-up: every retained event (the whole journal) applied batch by batch, one target transaction each.
const upsert = db.prepare(UPSERT);
const del = db.prepare('DELETE FROM t WHERE id = ?');
let cursor = journalStartCursor(src, ['t']);
let events = 0;
const cols = ['id', 'name', 'n', 'r', 'b'];
for (;;) {
  const b = readBatch(src, cursor, { limit: SAMPLE_EVERY });
  db.transaction(() => {
    for (const e of b.events) {
      if (e.op === 'update') del.run(toBindable(e.beforeKey[0]));
      if (e.op === 'delete') del.run(toBindable(e.key[0]));
      else if (e.after !== null) upsert.run(cols.map((c) => toBindable(e.after?.[c] ?? null)));
    }
  })();
  events += b.events.length;
  sample();
  cursor = b.to;
  if (!b.hasMore) break;
}
db.close();
src.close();
process.stdout.write(
  `${JSON.stringify({ startMb, peakMb: mb(peak), snapshotRows: snap.rows, catchUpEvents: events, ms: performance.now() - t0 })}\n`,
);
