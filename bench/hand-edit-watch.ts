/*
 * What the watch of hand edits (src/apply/edits/target-watch.ts, issue 19) costs
 * a follower, on a mirror of `--rows` rows, in one process:
 *
 *   npx tsx bench/hand-edit-watch.ts [--rows 200000] [--rounds 200]
 *
 * - a one-event batch (a source commit, then Syncer.runOnce), with the
 *   watch on and off, interleaved: the follower's per-batch cost;
 * - the idle look (Syncer.noticeTargetEdits) when nobody wrote the target;
 * - the same after another connection committed to a table of its own in
 *   the target: the first time (the mirror's pages are listed with dbstat),
 *   then with that list kept;
 * - the same after another connection edited one row of the mirror: the
 *   pages, then the comparison with the source (what verify of it costs).
 *
 * Medians of `--rounds` (the first-time and edit figures: one run each),
 * wall and this process's CPU time, in µs. And what a one-shot sync could
 * read of a write made while no sluice process had the target open: the
 * database header's file change counter (bytes 24..27) and its
 * version-valid-for number (92..95) before and after another connection
 * commits and closes (a WAL file: SQLite does not move them). And what
 * `sluice protect`'s guard triggers cost sluice's own writes at the least:
 * an INSERT OR REPLACE of every row of the mirror into itself, on a
 * connection that may write (the triggers' function defined), with and
 * without them, alternating. Printed; bench only.
 */
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Syncer } from '../src/apply/sync/sync.ts';
import { enable } from '../src/capture/enable.ts';
import { protect } from '../src/apply/edits/protect.ts';
import { allowProjectionWrites } from '../src/apply/target/allow-writes.ts';
import { openDatabase, type Db } from '../src/sqlite/connection.ts';
import { intFlag, makeScratch, median, renderTable } from './lib/workload.ts';

const argv = process.argv.slice(2);
const ROWS = intFlag(argv, 'rows', 200_000);
const ROUNDS = intFlag(argv, 'rounds', 200);
const scratch = makeScratch('sluice-bench-watch-');
const file = (n: string) => path.join(scratch.dir, n);
const log = (s: string) => process.stderr.write(`${s}\n`);

interface Sample {
  readonly us: number;
  readonly cpuUs: number;
}
function timeIt(fn: () => void): Sample {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  fn();
  const c = process.cpuUsage(c0);
  return { us: (performance.now() - t0) * 1000, cpuUs: c.user + c.system };
}
async function timeAsync(fn: () => Promise<unknown>): Promise<Sample> {
  const c0 = process.cpuUsage();
  const t0 = performance.now();
  await fn();
  const c = process.cpuUsage(c0);
  return { us: (performance.now() - t0) * 1000, cpuUs: c.user + c.system };
}
const med = (xs: readonly Sample[], k: keyof Sample) => median(xs.map((x) => x[k]));

async function main(): Promise<void> {
  log(`bench/hand-edit-watch: a mirror of ${ROWS} rows, ${ROUNDS} rounds, in ${scratch.dir}`);
  const src = openDatabase(file('src.db'), { create: true, wal: true });
  src.pragma('synchronous = NORMAL');
  src.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER, b BLOB)');
  src.exec(
    `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < ${ROWS}) INSERT INTO t SELECT i, 'name ' || i, i % 1000, randomblob(32) FROM c`,
  );
  enable(src, ['t']);
  const def = [{ name: 't', source: 't', kind: 'mirror' as const }];
  const targets = { on: file('on.db'), off: file('off.db') };
  const syncers = {
    on: await Syncer.open(file('src.db'), targets.on, { projections: def }),
    off: await Syncer.open(file('src.db'), targets.off, { projections: def, watchTarget: false }),
  };
  await syncers.on.runOnce();
  await syncers.off.runOnce();
  const upd = src.prepare('UPDATE t SET n = n + 1 WHERE id = ?');
  const batch: Record<'on' | 'off', Sample[]> = { on: [], off: [] };
  for (let r = 0; r < ROUNDS; r++) {
    for (const k of r % 2 === 0 ? (['on', 'off'] as const) : (['off', 'on'] as const)) {
      upd.run(1 + ((r * 7919) % ROWS));
      batch[k].push(await timeAsync(() => syncers[k].runOnce()));
    }
  }
  syncers.off.close();

  const s = syncers.on;
  const idle: Sample[] = [];
  for (let r = 0; r < ROUNDS; r++) idle.push(timeIt(() => s.noticeTargetEdits()));

  const other: Db = openDatabase(targets.on);
  other.exec('CREATE TABLE mine (id INTEGER PRIMARY KEY, v TEXT)');
  const first = timeIt(() => s.noticeTargetEdits());
  const own: Sample[] = [];
  const ins = other.prepare('INSERT INTO mine (v) VALUES (?)');
  for (let r = 0; r < ROUNDS; r++) {
    ins.run(`row ${r}`);
    own.push(timeIt(() => s.noticeTargetEdits()));
  }
  other.prepare("UPDATE t SET name = 'edited' WHERE id = ?").run(Math.floor(ROWS / 2));
  let found: ReturnType<Syncer['noticeTargetEdits']>;
  const edit = timeIt(() => (found = s.noticeTargetEdits()));
  const suspended = found?.projections.find((p) => p.name === 't')?.reason;
  if (suspended !== 'TARGET_EDITED') throw new Error(`the edit was not found: ${JSON.stringify(found)}`);
  other.close();
  s.close();
  src.close();

  const fmt = (us: number) => (us >= 1000 ? `${(us / 1000).toFixed(1)} ms` : `${us.toFixed(0)} µs`);
  const row = (what: string, xs: readonly Sample[]) => [what, fmt(med(xs, 'us')), fmt(med(xs, 'cpuUs'))];
  process.stdout.write(
    `\n${renderTable(
      ['what (a mirror of ' + ROWS + ' rows)', 'wall', 'cpu'],
      [
        row('one-event batch, watch off', batch.off),
        row('one-event batch, watch on (default)', batch.on),
        row('idle look, nobody wrote the target', idle),
        row("idle look after a commit to a user's own table: first (pages listed)", [first]),
        row("idle look after a commit to a user's own table: then (median)", own),
        row('idle look after a hand edit of one row: pages + comparison, suspended', [edit]),
      ],
    )}\n\nper-batch cost of the watch: ${fmt(med(batch.on, 'us') - med(batch.off, 'us'))} wall, ${fmt(med(batch.on, 'cpuUs') - med(batch.off, 'cpuUs'))} cpu (medians of ${ROUNDS} interleaved rounds).\n`,
  );

  // What a one-shot sync could read across processes: the header's change counter, around another process's commit.
  const header = () => {
    const b = Buffer.alloc(100);
    const fd = fs.openSync(targets.on, 'r');
    fs.readSync(fd, b, 0, 100, 0);
    fs.closeSync(fd);
    return `change counter ${b.readUInt32BE(24)}, version-valid-for ${b.readUInt32BE(92)}, ${fs.statSync(targets.on).size} bytes`;
  };
  const before = header();
  const writer = openDatabase(targets.on);
  writer.exec("INSERT INTO mine (v) VALUES ('one more')");
  writer.close(); // the last connection: it checkpoints the WAL into the file and removes it
  process.stdout.write(
    `header of the target (WAL mode) before another connection's commit and close: ${before}; after: ${header()}; -wal left: ${fs.existsSync(`${targets.on}-wal`)}\n`,
  );

  // protect's guards on the bare writes: the mirror's rows written over themselves, with and without the triggers.
  fs.copyFileSync(targets.on, file('guarded.db'));
  protect(file('guarded.db'), true);
  const bare: Record<'guarded' | 'plain', Sample[]> = { guarded: [], plain: [] };
  for (let r = 0; r < 6; r++) {
    for (const k of r % 2 === 0 ? (['guarded', 'plain'] as const) : (['plain', 'guarded'] as const)) {
      const db = openDatabase(k === 'guarded' ? file('guarded.db') : targets.on);
      allowProjectionWrites(db);
      bare[k].push(timeIt(() => db.exec('BEGIN; INSERT OR REPLACE INTO t SELECT * FROM t; ROLLBACK')));
      db.close();
    }
  }
  process.stdout.write(
    `INSERT OR REPLACE of the mirror's ${ROWS} rows over themselves: ${fmt(med(bare.plain, 'cpuUs'))} cpu without protect's guards, ${fmt(med(bare.guarded, 'cpuUs'))} with them (${(med(bare.guarded, 'cpuUs') / med(bare.plain, 'cpuUs')).toFixed(2)}x)\n`,
  );
}

try {
  await main();
} finally {
  scratch.cleanup();
}
