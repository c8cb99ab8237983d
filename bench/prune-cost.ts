/*
 * Why a range-delete prune is expensive inside a writer's statement (bench only).
 *
 *   npx tsx bench/prune-cost.ts [--rows 100000]
 *
 * A journal j of sluice's shape, written by an AFTER INSERT trigger on t
 * (with a constant ts, no function call), with and without the prune
 * `AFTER INSERT ON j WHEN NEW.seq % K = 0 BEGIN DELETE FROM j WHERE seq <=
 * NEW.seq - 4096; END`. Prints process CPU µs per event.
 *
 * Part 1, K = 1,024, three writers: rows appended to j directly; inserts
 * into t without an explicit rowid; inserts into t with one. Only the last
 * may abort (the rowid can conflict), and a statement that may abort and
 * writes two tables runs with a statement journal: sluice's triggers always
 * do, because any function call (the clock) may abort too. Only there does
 * the prune cost anything.
 *
 * Part 2, the last writer, K from 16 to 1,024: the cost is a cliff, not a
 * slope. A statement journal stays in memory up to SQLITE_STMTJRNL_SPILL
 * (64 KiB, 16 pages) and then spills to a temporary file, created and
 * removed for that statement. A prune that touches more than about 16 pages
 * (here ~400 events of ~90 bytes) spills, and costs ~2.8 ms; a smaller one
 * costs about nothing. Part 3: with PRAGMA temp_store = MEMORY on the writer
 * the statement journal never spills, and K = 1,024 costs nothing either.
 */
import fs from 'node:fs';
import path from 'node:path';
import { openDatabase } from '../src/sqlite/connection.ts';
import { intFlag, makeScratch, median } from './lib/workload.ts';

const rows = intFlag(process.argv.slice(2), 'rows', 100_000);
const scratch = makeScratch('sluice-prune-cost-');
const J = 'CREATE TABLE j (seq INTEGER PRIMARY KEY, tid, op, ts, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9)';
const prune = (k: number) =>
  `CREATE TRIGGER p AFTER INSERT ON j WHEN NEW.seq % ${k} = 0 BEGIN DELETE FROM j WHERE seq <= NEW.seq - 4096; END`;

type How = 'direct' | 'auto' | 'explicit';

function run(how: How, interval: number, tempStore = 'DEFAULT'): number {
  const file = path.join(scratch.dir, 'p.db');
  for (const s of ['', '-wal', '-shm']) fs.rmSync(file + s, { force: true });
  const db = openDatabase(file, { create: true, role: 'bench' });
  try {
    db.pragma('synchronous = NORMAL');
    db.pragma(`temp_store = ${tempStore}`);
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER, r REAL, b BLOB)');
    db.exec(J);
    db.exec(
      'CREATE TRIGGER ti AFTER INSERT ON t BEGIN INSERT INTO j (tid, op, ts, c0, c1, c2, c3, c4) VALUES (1, 1, 0.0, NEW.id, NEW.name, NEW.n, NEW.r, NEW.b); END',
    );
    if (interval > 0) db.exec(prune(interval));
    const ins =
      how === 'direct'
        ? db.prepare('INSERT INTO j (tid, op, ts, c0, c1, c2, c3, c4) VALUES (1, 1, 0.0, ?, ?, ?, ?, ?)')
        : how === 'auto'
          ? db.prepare('INSERT INTO t (name, n, r, b) VALUES (?, ?, ?, ?)')
          : db.prepare('INSERT INTO t VALUES (?, ?, ?, ?, ?)');
    const b = Buffer.alloc(32, 7);
    const c0 = process.cpuUsage();
    db.exec('BEGIN');
    for (let i = 1; i <= rows; i++) {
      if (how === 'auto') ins.run(`name-${i}`, i, i / 3, b);
      else ins.run(i, `name-${i}`, i, i / 3, b);
    }
    db.exec('COMMIT');
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / rows;
  } finally {
    db.close();
  }
}

try {
  const label: Record<How, string> = {
    direct: 'INSERT INTO j directly (no statement journal)',
    auto: 'INSERT INTO t without an explicit rowid, trigger appends to j (no statement journal)',
    explicit: 'INSERT INTO t with an explicit rowid (may abort), trigger appends to j (statement journal)',
  };
  const times = (how: How, interval: number) => median([0, 1, 2].map(() => run(how, interval)));
  for (const how of ['direct', 'auto', 'explicit'] as const) {
    const plain = times(how, 0);
    const pruned = times(how, 1024);
    console.log(
      `${label[how]}: ${plain.toFixed(2)} µs/event without the prune, ${pruned.toFixed(2)} with it (+${(pruned - plain).toFixed(2)} µs per event, +${(((pruned - plain) * 1024) / 1000).toFixed(2)} ms per prune of 1,024 rows)`,
    );
  }
  const plain = times('explicit', 0);
  console.log(`\n${label.explicit}, pruning every K events (${plain.toFixed(2)} µs/event without pruning):`);
  for (const k of [16, 64, 128, 256, 384, 448, 512, 1024]) {
    const t = times('explicit', k);
    console.log(
      `  K = ${String(k).padStart(4)}: ${t.toFixed(2)} µs/event (${t - plain >= 0 ? '+' : ''}${(t - plain).toFixed(2)}), ${((Math.max(0, t - plain) * k) / 1000).toFixed(2)} ms per prune`,
    );
  }
  // With temp_store = MEMORY the statement journal never goes to a file (a writer-side setting sluice cannot impose on other writers).
  const mem = (k: number) => median([0, 1, 2].map(() => run('explicit', k, 'MEMORY')));
  console.log(
    `\nthe same writer with PRAGMA temp_store = MEMORY: ${mem(0).toFixed(2)} µs/event without pruning, ${mem(1024).toFixed(2)} pruning every 1,024`,
  );
} finally {
  scratch.cleanup();
}
