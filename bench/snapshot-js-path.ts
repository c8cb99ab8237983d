/*
 * Where the time of a snapshot's JS callback path goes (issue 23, item 7),
 * per row, against the floor bench/feed.ts judges it by (a raw `INSERT INTO
 * main.t SELECT * FROM src.t` over an attached source, all in C):
 *
 *   npx tsx bench/snapshot-js-path.ts [--rows N (500000)] [--rounds N (3)]
 *
 * The source is bench/feed.ts's: t(id INTEGER PRIMARY KEY, name TEXT, n
 * INTEGER, r REAL, b BLOB) with 32-byte blobs. Each stage adds one thing to
 * the one before, all timed in this process's CPU time (user + system) and
 * wall time, median over interleaved rounds:
 *   floor      raw INSERT ... SELECT into an empty target (one transaction);
 *   read       every row into JS as a raw array (iterate(), bigint mode, as
 *              snapshot() reads them), nothing done with it;
 *   read-number  the same without bigint mode (integers as JS numbers);
 *   read-key   only the key column, as numbers: one crossing per row, about
 *              the least a row read into JS costs;
 *   read-all   the rows read in pages of 1,000 with all() instead;
 *   decode     + the exact decoding (the U+FFFD test and fromDriver per value);
 *   snapshot   snapshot() with an empty onRow (read, decode, the callback);
 *   write      + the bench's handler: toBindable per value and a prepared
 *              INSERT per row on the target (the crossing back into SQLite);
 *   insert     the prepared INSERT alone, over rows already in memory;
 *   insert-100 the same rows, 100 to a statement (a multi-row VALUES).
 * Printed per row (ns) and as rows/s / the floor's. Bench only: nothing judged.
 */
import fs from 'node:fs';
import path from 'node:path';
import { openDatabase, type Db } from '../src/sqlite/connection.ts';
import { enable } from '../src/capture/enable.ts';
import { snapshot } from '../src/feed/snapshot.ts';
import { fromDriver, mayBeLossyText, toBindable, type SqlValue } from '../src/sqlite/codec.ts';
import { intFlag, makeScratch, median, renderTable } from './lib/workload.ts';
import { RAW_COPY_SQL } from './lib/floors.ts';

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write('usage: npx tsx bench/snapshot-js-path.ts [--rows N (500000)] [--rounds N (3)]\n');
  process.exit(0);
}
const ROWS = intFlag(argv, 'rows', 500_000);
const ROUNDS = intFlag(argv, 'rounds', 3);
const DDL = 'CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER, r REAL, b BLOB)';
const INSERT = 'INSERT INTO t (id, name, n, r, b) VALUES (?, ?, ?, ?, ?)';
const scratch = makeScratch('sluice-bench-snapjs-');
const file = (n: string) => path.join(scratch.dir, n);
const discard = (p: string) => {
  for (const s of ['', '-wal', '-shm']) fs.rmSync(p + s, { force: true });
};

const source = file('src.db');
{
  const db = openDatabase(source, { create: true, role: 'bench', wal: true });
  db.exec(DDL);
  enable(db, ['t']);
  db.prepare(
    `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?)
     INSERT INTO t (id, name, n, r, b) SELECT i, 'name-' || i, i * 7, i / 3.0, randomblob(32) FROM s`,
  ).run(ROWS);
  db.pragma('wal_checkpoint(TRUNCATE)');
  db.close();
}

function target(): { db: Db; path: string } {
  const p = file('tgt.db');
  discard(p);
  const db = openDatabase(p, { create: true, role: 'target', wal: true });
  db.exec(DDL);
  return { db, path: p };
}

const SELECT = 'SELECT id, name, n, r, b, rowid FROM main.t';
let held: unknown[][] = [];
const stages: Record<string, () => void> = {
  floor() {
    const { db, path: p } = target();
    db.prepare('ATTACH DATABASE ? AS src').run(source);
    db.transaction(() => db.prepare(RAW_COPY_SQL).run())();
    db.close();
    discard(p);
  },
  read() {
    const src = openDatabase(source, { readonly: true });
    let n = 0;
    src.transaction(() => {
      for (const raw of src.prepare(SELECT).raw().iterate() as IterableIterator<unknown[]>) n += raw.length;
    })();
    src.close();
    if (n !== ROWS * 6) throw new Error('read: not every row');
  },
  'read-number'() {
    const src = openDatabase(source, { readonly: true });
    let n = 0;
    src.transaction(() => {
      for (const raw of src.prepare(SELECT).raw().safeIntegers(false).iterate() as IterableIterator<unknown[]>) n += raw.length;
    })();
    src.close();
    if (n !== ROWS * 6) throw new Error('read-number: not every row');
  },
  'read-key'() {
    const src = openDatabase(source, { readonly: true });
    let n = 0;
    src.transaction(() => {
      for (const raw of src.prepare('SELECT id FROM main.t').raw().safeIntegers(false).iterate() as IterableIterator<unknown[]>)
        n += raw.length;
    })();
    src.close();
    if (n !== ROWS) throw new Error('read-key: not every row');
  },
  'read-all'() {
    const src = openDatabase(source, { readonly: true });
    let n = 0;
    const page = src.prepare(`${SELECT} WHERE rowid > ? ORDER BY rowid LIMIT 1000`).raw();
    src.transaction(() => {
      let last: unknown = -1n;
      for (;;) {
        const rows = page.all(last) as unknown[][];
        n += rows.length;
        if (rows.length < 1000) break;
        last = (rows[rows.length - 1] as unknown[])[5];
      }
    })();
    src.close();
    if (n !== ROWS) throw new Error('read-all: not every row');
  },
  decode() {
    const src = openDatabase(source, { readonly: true });
    let n = 0;
    src.transaction(() => {
      for (const raw of src.prepare(SELECT).raw().iterate() as IterableIterator<unknown[]>) {
        const row = raw.slice(0, 5);
        if (row.some(mayBeLossyText)) throw new Error('lossy');
        n += row.map((v) => fromDriver(v ?? null)).length;
      }
    })();
    src.close();
    if (n !== ROWS * 5) throw new Error('decode: not every row');
  },
  snapshot() {
    const src = openDatabase(source, { readonly: true });
    let n = 0;
    snapshot(src, ['t'], { onRow: () => n++ });
    src.close();
    if (n !== ROWS) throw new Error('snapshot: not every row');
  },
  write() {
    const src = openDatabase(source, { readonly: true });
    const { db, path: p } = target();
    const ins = db.prepare(INSERT);
    db.transaction(() => snapshot(src, ['t'], { onRow: (_t, row) => ins.run(row.map((v) => toBindable(v as SqlValue))) }))();
    db.close();
    src.close();
    discard(p);
  },
  insert() {
    if (held.length === 0) {
      const src = openDatabase(source, { readonly: true });
      held = src.prepare('SELECT id, name, n, r, b FROM t').raw().all() as unknown[][];
      src.close();
    }
    const { db, path: p } = target();
    const ins = db.prepare(INSERT);
    db.transaction(() => {
      for (const r of held) ins.run(r);
    })();
    db.close();
    discard(p);
  },
  'insert-100'() {
    if (held.length === 0) stages.insert?.();
    const { db, path: p } = target();
    const many = db.prepare(`INSERT INTO t (id, name, n, r, b) VALUES ${Array.from({ length: 100 }, () => '(?, ?, ?, ?, ?)').join(', ')}`);
    const one = db.prepare(INSERT);
    db.transaction(() => {
      let i = 0;
      for (; i + 100 <= held.length; i += 100) many.run(held.slice(i, i + 100).flat());
      for (; i < held.length; i++) one.run(held[i]);
    })();
    db.close();
    discard(p);
  },
};

const cpu: Record<string, number[]> = {};
const wall: Record<string, number[]> = {};
const names = Object.keys(stages);
for (let round = 0; round < ROUNDS; round++) {
  // Rotate the order each round, so no stage always runs on a warmer cache.
  const order = names.map((_, i) => names[(i + round) % names.length] as string);
  for (const name of order) {
    const c0 = process.cpuUsage();
    const w0 = performance.now();
    (stages[name] as () => void)();
    const c = process.cpuUsage(c0);
    (wall[name] ??= []).push(performance.now() - w0);
    (cpu[name] ??= []).push((c.user + c.system) / 1000);
  }
  process.stderr.write(`round ${round + 1}/${ROUNDS} done\n`);
}
const perRow = (ms: number) => ((ms * 1e6) / ROWS).toFixed(0);
const floorCpu = median(cpu.floor ?? []);
const floorWall = median(wall.floor ?? []);
process.stdout.write(
  `${renderTable(
    ['stage', 'cpu ns/row', 'wall ns/row', 'cpu: floor / stage', 'wall: floor / stage'],
    names.map((n) => {
      const c = median(cpu[n] ?? []);
      const w = median(wall[n] ?? []);
      return [n, perRow(c), perRow(w), `${(floorCpu / c).toFixed(2)}x`, `${(floorWall / w).toFixed(2)}x`];
    }),
  )}\n${ROWS} rows, ${ROUNDS} rounds (medians); floor: raw INSERT ... SELECT, ${((ROWS / floorWall) * 1000).toFixed(0)} rows/s wall\n`,
);
scratch.cleanup();
