/*
 * What each part of capture costs on the bulk workload, in process CPU time
 * against no capture in the same run (median of paired rounds): sluice as
 * it is, without the REPLACE guards' flush triggers, without any guard, and
 * without the per-table last-seq upkeep as well. The variants without guards
 * are not exact (lower bounds).
 *
 *   npx tsx bench/guard-cost.ts [rows=50000] [rounds=5]
 */
import Database from 'better-sqlite3';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { enable } from '../src/capture/enable.ts';
import { openDatabase } from '../src/sqlite/connection.ts';

const N = Number(process.argv[2] ?? 50000);
const ROUNDS = Number(process.argv[3] ?? 5);
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'guard-'));
type Variant = { name: string; setup: (db: Database.Database) => void };
const blob = Buffer.alloc(32, 7);
const variants: Variant[] = [
  { name: 'none', setup: () => {} },
  {
    name: 'src',
    setup: (db) => {
      enable(db, ['t']);
    },
  },
  {
    name: 'flush-inline',
    setup: (db) => {
      enable(db, ['t']);
      const get = (n: string) => db.prepare('select sql from sqlite_schema where name = ?').pluck().get(n) as string;
      const fins = get('_sluice_t1_fins');
      const ins = get('_sluice_t1_ins');
      const body = fins.slice(fins.indexOf('BEGIN') + 5, fins.lastIndexOf('END'));
      db.exec('DROP TRIGGER _sluice_t1_fins; DROP TRIGGER _sluice_t1_ins');
      db.exec(ins.replace('FOR EACH ROW BEGIN', `FOR EACH ROW BEGIN ${body}`));
    },
  },
  {
    name: 'no-flush',
    setup: (db) => {
      enable(db, ['t']);
      db.exec('DROP TRIGGER _sluice_t1_fins; DROP TRIGGER _sluice_t1_fupd');
    },
  },
  {
    name: 'no-guards',
    setup: (db) => {
      enable(db, ['t']);
      db.exec('DROP TRIGGER _sluice_t1_fins; DROP TRIGGER _sluice_t1_fupd; DROP TRIGGER _sluice_t1_bins; DROP TRIGGER _sluice_t1_bupd');
    },
  },
  {
    name: 'no-guards-no-last',
    setup: (db) => {
      enable(db, ['t']);
      db.exec('DROP TRIGGER _sluice_t1_fins; DROP TRIGGER _sluice_t1_fupd; DROP TRIGGER _sluice_t1_bins; DROP TRIGGER _sluice_t1_bupd');
      for (const n of ['ins', 'upd', 'del']) {
        const sql = db.prepare('select sql from sqlite_schema where name = ?').pluck().get(`_sluice_t1_${n}`) as string;
        db.exec(`DROP TRIGGER _sluice_t1_${n}`);
        db.exec(sql.replace(/\n {2}UPDATE _sluice_last[^\n]*/, ''));
      }
    },
  },
];
const results: Record<string, number[][]> = {};
for (let r = 0; r < ROUNDS; r++) {
  for (const v of variants) {
    const file = path.join(dir, `${v.name}-${r}.db`);
    const setupDb = openDatabase(file, { create: true });
    setupDb.pragma('journal_mode = WAL');
    setupDb.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER, r REAL, b BLOB)');
    v.setup(setupDb);
    setupDb.close();
    const db = new Database(file);
    db.pragma('synchronous = NORMAL');
    const ins = db.prepare('INSERT INTO t VALUES (?, ?, ?, ?, ?)');
    const upd = db.prepare('UPDATE t SET name = ?, n = n + 1 WHERE id = ?');
    const del = db.prepare('DELETE FROM t WHERE id = ?');
    const phase = (fn: () => void) => {
      const c0 = process.cpuUsage();
      db.transaction(fn)();
      const c = process.cpuUsage(c0);
      return (c.user + c.system) / 1000;
    };
    const a = phase(() => {
      for (let i = 1; i <= N; i++) ins.run(i, `name ${i}`, i, i / 3, blob);
    });
    const b = phase(() => {
      for (let i = 1; i <= N; i++) upd.run(`new ${i}`, i);
    });
    const c = phase(() => {
      for (let i = 1; i <= N; i++) del.run(i);
    });
    (results[v.name] ??= []).push([a, b, c]);
    db.close();
  }
}
const med = (xs: number[]) => xs.sort((x, y) => x - y)[Math.floor(xs.length / 2)] as number;
const base = [0, 1, 2].map((k) => med((results.none as number[][]).map((x) => x[k] as number)));
for (const v of variants) {
  const m = [0, 1, 2].map((k) => med((results[v.name] as number[][]).map((x) => x[k] as number)));
  console.log(v.name.padEnd(20), m.map((x, k) => `${x.toFixed(0)}ms ${(x / (base[k] as number)).toFixed(2)}x`).join('  '));
}
fs.rmSync(dir, { recursive: true, force: true });
