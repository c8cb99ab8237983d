/*
 * Why a range-delete prune is expensive inside a writer's statement (bench only).
 *
 *   npx tsx bench/prune-cost.ts [--rows 100000]
 *
 * A journal j of sluice's shape, written by an AFTER INSERT trigger on t,
 * with and without `AFTER INSERT ON j WHEN NEW.seq % 1024 = 0 BEGIN DELETE
 * FROM j WHERE seq <= NEW.seq - 1024; END`, and the same prune when rows are
 * appended to j directly by a statement without a statement journal. Prints
 * process CPU µs per written row. A statement that fires a trigger writing a
 * second table and that may abort (an INTEGER PRIMARY KEY insert, any
 * function call such as the clock) runs with a statement journal, and there
 * the prune's deletes cost several times what they cost in a plain statement.
 */
import fs from 'node:fs';
import path from 'node:path';
import { openDatabase } from '../src/sqlite/connection.ts';
import { intFlag, makeScratch, median } from './lib/workload.ts';

const rows = intFlag(process.argv.slice(2), 'rows', 100_000);
const scratch = makeScratch('sluice-prune-cost-');
const J = 'CREATE TABLE j (seq INTEGER PRIMARY KEY, tid, op, ts, c0, c1, c2, c3, c4, c5, c6, c7, c8, c9)';
const PRUNE = 'CREATE TRIGGER p AFTER INSERT ON j WHEN NEW.seq % 1024 = 0 BEGIN DELETE FROM j WHERE seq <= NEW.seq - 1024; END';

type How = 'direct' | 'auto' | 'explicit';

function run(how: How, prune: boolean): number {
  const file = path.join(scratch.dir, 'p.db');
  for (const s of ['', '-wal', '-shm']) fs.rmSync(file + s, { force: true });
  const db = openDatabase(file, { create: true, role: 'bench' });
  try {
    db.pragma('synchronous = NORMAL');
    db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER, r REAL, b BLOB)');
    db.exec(J);
    db.exec('CREATE TRIGGER ti AFTER INSERT ON t BEGIN INSERT INTO j (tid, op, ts, c0, c1, c2, c3, c4) VALUES (1, 1, 0.0, NEW.id, NEW.name, NEW.n, NEW.r, NEW.b); END');
    if (prune) db.exec(PRUNE);
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
  for (const how of ['direct', 'auto', 'explicit'] as const) {
    const times = (prune: boolean) => median([0, 1, 2].map(() => run(how, prune)));
    const plain = times(false);
    const pruned = times(true);
    console.log(`${label[how]}: ${plain.toFixed(2)} µs/row without the prune, ${pruned.toFixed(2)} with it (+${(pruned - plain).toFixed(2)} µs per event, +${(((pruned - plain) * 1024) / 1000).toFixed(2)} ms per prune of 1,024 rows)`);
  }
} finally {
  scratch.cleanup();
}
