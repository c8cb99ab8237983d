/*
 * Fan-out through JetStream against the DESIGN.md row "fan-out through
 * JetStream to 4 subscribers: p99 <= 25 ms at 1k writes/s (also with one
 * subscriber stopped); throughput >= 0.6x `sync` to one target".
 *
 *   npx tsx bench/fan-out.ts [--events N (50000)] [--seconds N (5)] [--format jsonl|segment (jsonl)] [--keep]
 *
 * One source t(id INTEGER PRIMARY KEY, v TEXT, n INTEGER), captured; a real
 * nats-server; `publish --follow` (its default batch window: 1,000 seqs, or
 * 10,000 with --format segment; docs/broker.md) and four `subscribe
 * --follow`, each its own process and target; and `sync --follow` to a fifth
 * target, the baseline. All are the compiled CLI (dist/). Writers are
 * python3 sqlite3 processes. With --format segment the publisher publishes
 * segments (publish --format segment) and the subscribers apply them.
 *
 * 1. Throughput. With the fan-out processes SIGSTOPped, a writer commits N
 *    single-row INSERTs in transactions of 500 as fast as it can; sync's
 *    events/s is N over the time from the writer's first commit to the sync
 *    target reaching the last seq. Then sync is SIGSTOPped, the fan-out
 *    processes continued and left to catch up, and the same burst is written
 *    again: fan-out's events/s is N over the time to the last of the four
 *    targets reaching the last seq. The ratio is fan-out / sync. In CPU
 *    time (user + system from /proc, beside the wall ratio on a shared
 *    machine): sync's CPU per event over the busiest stage's of the fan-out
 *    (the publisher, nats-server, each subscriber), the pace the pipeline
 *    keeps when each process has a core of its own; the sum is shown too.
 * 2. Latency at 1k writes/s (sync still stopped). A writer commits one
 *    INSERT per ms on a fixed schedule for --seconds and logs when each
 *    commit returned. Each target has a trigger of ours that stamps the time
 *    (SQLite's clock, ms) every row is applied; a row's latency is the last
 *    of the four stamps minus its source commit.
 * 3. Isolation. One subscriber is SIGSTOPped, another's target is tampered
 *    (a row deleted that the next write updates: it suspends with
 *    TARGET_DIVERGED and exits), and phase 2 is run again: the latency to
 *    the last of the two healthy targets must stay within the same target,
 *    and the publisher must have published everything (the healthy targets
 *    reach the source's seq). Then the stopped one is continued and must
 *    catch up.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { NatsServer } from '../test/support/nats-server.ts';
import { BIN, cpuMs, Proc, ROOT, sourceSeq, targetSeq, until } from './lib/fleet.ts';
import { fmtMs, intFlag, makeScratch, renderTable } from './lib/workload.ts';
import { emitFigures } from './lib/figures.ts';
import { decodeCursor } from '../src/feed/cursor.ts';
import { connect } from '@nats-io/transport-node';
import { jetstreamManager } from '@nats-io/jetstream';
import { defaultStreamName, subjectsOf } from '../src/broker/subjects.ts';

const argv = process.argv.slice(2);
const EVENTS = intFlag(argv, 'events', 50_000);
const SECONDS = intFlag(argv, 'seconds', 5);
const KEEP = argv.includes('--keep');
const FORMAT = argv.includes('--format') ? String(argv[argv.indexOf('--format') + 1]) : 'jsonl';
if (FORMAT !== 'jsonl' && FORMAT !== 'segment') throw new Error(`--format ${FORMAT}: jsonl or segment`);
const TARGET_P99_MS = 25;
const TARGET_RATIO = 0.6;
const ROW =
  'fan-out through JetStream to 4 subscribers: p99 <= 25 ms at 1k writes/s (also with one subscriber stopped); throughput >= 0.6x sync to one target';

const { dir, cleanup } = makeScratch('sluice-fan-out-');
const at = (f: string) => path.join(dir, f);
const cli = (...args: string[]) => execFileSync(process.execPath, [BIN, ...args], { cwd: ROOT, encoding: 'utf8' });
const python = (code: string, ...args: string[]) => execFileSync('python3', ['-c', code, ...args], { encoding: 'utf8' });

const src = at('source.db');
python(
  'import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT, n INTEGER)"); c.commit()',
  src,
);
cli('enable', src, 't');
const sourceId = (JSON.parse(cli('status', src, '--json')) as { sourceId: string }).sourceId;

const nats = await NatsServer.start({ storeDir: at('nats') });
const subTargets = [1, 2, 3, 4].map((i) => at(`sub${i}.db`));
const syncTarget = at('sync.db');
const sync = new Proc('sync', ['sync', src, syncTarget, '--follow'], at('sync.log')).start();
const publish = new Proc('publish', ['publish', src, '--nats', nats.url, '--format', FORMAT, '--follow'], at('publish.log')).start();
if (!(await until(() => fs.readFileSync(publish.log, 'utf8').includes('published a snapshot'), 30_000)))
  throw new Error(`publish made no snapshot; see ${publish.log}`);
const subs = subTargets.map((t, i) =>
  new Proc(
    `subscribe-${i + 1}`,
    ['subscribe', t, '--nats', nats.url, '--source', sourceId, '--format', FORMAT, '--follow'],
    at(`sub${i + 1}.log`),
  ).start(),
);
const fanOut = [publish, ...subs];
// The batch messages in the stream, to tell how many events a message carries.
const benchNc = await connect({ servers: nats.url });
const jsm = await jetstreamManager(benchNc);
const batchSubject = subjectsOf(sourceId, FORMAT).batch;
async function batchMessages(): Promise<number> {
  const info = await jsm.streams.info(defaultStreamName(sourceId), { subjects_filter: batchSubject });
  return info.state.subjects?.[batchSubject] ?? 0;
}
if (!(await until(() => [syncTarget, ...subTargets].every((t) => targetSeq(t) >= 0), 60_000)))
  throw new Error(`a follower made no target; see the logs in ${dir}`);

// Our stamp of when each row is applied (the trigger runs inside the follower's transaction, just before its commit).
for (const t of [...subTargets, syncTarget]) {
  const db = new Database(t);
  db.pragma('busy_timeout = 10000');
  db.exec(`CREATE TABLE bench_applied (id INTEGER PRIMARY KEY, ms REAL);
    CREATE TRIGGER bench_stamp AFTER INSERT ON t BEGIN
      INSERT OR REPLACE INTO bench_applied VALUES (NEW.id, (julianday('now') - 2440587.5) * 86400000.0);
    END;`);
  db.close();
}

const signal = (procs: readonly Proc[], sig: NodeJS.Signals) => procs.forEach((p) => p.child?.kill(sig));

/** Commits `count` INSERTs from id `from`, 500 a transaction; returns the ms of the first commit. */
function burst(from: number, count: number): number {
  const out = python(
    `import sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('PRAGMA busy_timeout = 10000')
start = None
f, n = int(sys.argv[2]), int(sys.argv[3])
for b in range(f, f + n, 500):
    c.execute('BEGIN')
    c.executemany('INSERT INTO t VALUES (?, ?, ?)', [(i, 'burst', i) for i in range(b, min(b + 500, f + n))])
    c.execute('COMMIT')
    if start is None: start = time.time() * 1000
print(start)`,
    src,
    String(from),
    String(count),
  );
  return Number(out.trim());
}

async function reached(targets: readonly string[], seq: number): Promise<number> {
  if (!(await until(() => targets.every((t) => targetSeq(t) >= seq), 300_000, 5))) throw new Error(`targets did not reach seq ${seq}`);
  return Date.now();
}

// 1. Throughput.
signal(fanOut, 'SIGSTOP');
const syncCpu0 = cpuMs(sync.pid);
let start = burst(1, EVENTS);
const syncMs = (await reached([syncTarget], sourceSeq(src))) - start;
const syncCpu = cpuMs(sync.pid) - syncCpu0;
signal([sync], 'SIGSTOP');
signal(fanOut, 'SIGCONT');
await reached(subTargets, sourceSeq(src));
const stages = [...fanOut.map((p) => ({ name: p.name, pid: p.pid })), { name: 'nats-server', pid: nats.pid }];
const stageCpu0 = stages.map((st) => cpuMs(st.pid));
const burstMsgs0 = await batchMessages();
start = burst(EVENTS + 1, EVENTS);
const burstSeq = sourceSeq(src);
// When the publisher had the whole burst acked (its state file holds the last acked cursor, a little behind): publish's share of the time.
const stateFile = fs.readdirSync(dir).find((f) => f.startsWith('source.db.publish-') && f.endsWith('.cursor'));
let publishedMs = Number.NaN;
await until(
  () => {
    const c = stateFile === undefined ? undefined : fs.readFileSync(at(stateFile), 'utf8').trim();
    if (c !== undefined && c !== '' && decodeCursor(c).seq >= burstSeq && Number.isNaN(publishedMs)) publishedMs = Date.now() - start;
    return subTargets.every((t) => targetSeq(t) >= burstSeq);
  },
  300_000,
  5,
);
const fanMs = Date.now() - start;
// The state file is written behind the acks (publish-state-file.ts): it may say so a little after the targets.
await until(
  () => {
    const c = stateFile === undefined ? undefined : fs.readFileSync(at(stateFile), 'utf8').trim();
    if (c !== undefined && c !== '' && decodeCursor(c).seq >= burstSeq && Number.isNaN(publishedMs)) publishedMs = Date.now() - start;
    return !Number.isNaN(publishedMs);
  },
  10_000,
  5,
);
const stageCpu = stages.map((st, i) => ({ name: st.name, ms: cpuMs(st.pid) - (stageCpu0[i] as number) }));
const burstMsgs = (await batchMessages()) - burstMsgs0;
const syncRate = EVENTS / (syncMs / 1000);
const fanRate = EVENTS / (fanMs / 1000);
const busiest = stageCpu.reduce((a, b) => (b.ms > a.ms ? b : a));
const fanCpuSum = stageCpu.reduce((a, b) => a + b.ms, 0);

/** Writes one INSERT per ms for SECONDS from id `from` (an UPDATE of id 1 first if `touch`); the commit ms of each id. */
function paced(from: number, touch: boolean): Map<number, number> {
  const out = python(
    `import json, sqlite3, sys, time
c = sqlite3.connect(sys.argv[1], isolation_level=None); c.execute('PRAGMA busy_timeout = 10000'); c.execute('PRAGMA synchronous = NORMAL')
f, n = int(sys.argv[2]), int(sys.argv[3])
if sys.argv[4] == '1': c.execute("UPDATE t SET v = 'touched' WHERE id = 1")
log = []
t0 = time.time()
for k in range(n):
    due = t0 + k / 1000
    d = due - time.time()
    if d > 0: time.sleep(d)
    c.execute('INSERT INTO t VALUES (?, ?, ?)', (f + k, 'paced', k))
    log.append([f + k, time.time() * 1000])
print(json.dumps(log))`,
    src,
    String(from),
    String(SECONDS * 1000),
    touch ? '1' : '0',
  );
  return new Map(JSON.parse(out) as [number, number][]);
}

function stamps(t: string): Map<number, number> {
  const db = new Database(t, { readonly: true });
  try {
    return new Map((db.prepare('SELECT id, ms FROM bench_applied').raw().all() as [number, number][]).map(([i, m]) => [i, m]));
  } finally {
    db.close();
  }
}

function percentiles(commits: Map<number, number>, targets: readonly string[]) {
  const all = targets.map(stamps);
  const lat = [...commits].map(([id, ms]) => Math.max(...all.map((s) => s.get(id) ?? Number.POSITIVE_INFINITY)) - ms).sort((a, b) => a - b);
  const q = (p: number) => lat[Math.min(lat.length - 1, Math.floor(p * lat.length))] as number;
  // The slowest write per 500 ms of the phase: whether the tail is one stall or spread out.
  const first = Math.min(...commits.values());
  const worst = new Map<number, number>();
  for (const [id, ms] of commits) {
    const slot = Math.floor((ms - first) / 500);
    const l = Math.max(...all.map((s) => s.get(id) ?? Number.POSITIVE_INFINITY)) - ms;
    worst.set(slot, Math.max(worst.get(slot) ?? 0, l));
  }
  return {
    writes: lat.length,
    p50: q(0.5),
    p99: q(0.99),
    max: lat.at(-1) as number,
    worstPerHalfSecond: [...worst.values()].map(Math.round),
  };
}

// 2. Latency at 1k writes/s to the last of four targets.
let next = 2 * EVENTS + 1;
/** CPU ms of each fan-out stage since `from` (the same order as `stages`). */
const stageCpuNow = () => stages.map((st) => cpuMs(st.pid));
const since = (from: number[]) =>
  stages
    .map((st, i) => `${st.name} ${(cpuMs(st.pid) - (from[i] as number)).toFixed(0)}`)
    .filter((t) => !t.endsWith('NaN'))
    .join(', ');
let cpuFrom = stageCpuNow();
let msgs0 = await batchMessages();
const commits = paced(next, false);
next += SECONDS * 1000;
await reached(subTargets, sourceSeq(src));
const pacedMsgs = (await batchMessages()) - msgs0;
const fan = percentiles(commits, subTargets);
const pacedCpu = since(cpuFrom);

// 3. One subscriber stopped, one suspended by a tampered target: the other two and the publisher go on.
const [sub1, sub2, sub3, sub4] = subs as [Proc, Proc, Proc, Proc];
signal([sub4], 'SIGSTOP');
const tampered = new Database(subTargets[2] as string);
tampered.pragma('busy_timeout = 10000');
tampered.exec('DELETE FROM t WHERE id = 1');
tampered.close();
const healthy = [subTargets[0], subTargets[1]] as string[];
cpuFrom = stageCpuNow();
msgs0 = await batchMessages();
const commits2 = paced(next, true);
await reached(healthy, sourceSeq(src));
const isolatedMsgs = (await batchMessages()) - msgs0;
const isolated = percentiles(commits2, healthy);
const isolatedCpu = since(cpuFrom);
const suspended = await until(() => sub3.child === undefined, 30_000);
const s3 = fs.readFileSync(sub3.log, 'utf8');
signal([sub4], 'SIGCONT');
const contAt = Date.now();
const stoppedCaughtUp = (await reached([subTargets[3] as string], sourceSeq(src))) - contAt;

for (const p of [sync, ...fanOut]) {
  p.child?.kill('SIGCONT');
  await p.stop('SIGTERM');
}
await benchNc.close();
await nats.dispose();
void sub1;
void sub2;

process.stdout.write(
  `\nfan-out bench (${dir})\n\n${renderTable(
    ['figure', 'value'],
    [
      ['sync to one target, events/s', syncRate.toFixed(0)],
      ['publish + 4 subscribe, events/s to the last target', fanRate.toFixed(0)],
      ['fan-out / sync', (fanRate / syncRate).toFixed(2)],
      ['of which: the publisher had every batch acked after', `${Math.round(publishedMs)} ms of ${Math.round(fanMs)} ms`],
      ['batch messages of the burst (events each)', `${burstMsgs} (${(EVENTS / burstMsgs).toFixed(0)})`],
      [`CPU ms: sync for ${EVENTS} events`, syncCpu.toFixed(0)],
      ['CPU ms: fan-out per stage', stageCpu.map((st) => `${st.name} ${st.ms.toFixed(0)}`).join(', ')],
      ['CPU ms: fan-out, all stages', fanCpuSum.toFixed(0)],
      [`in CPU: sync / the busiest stage (${busiest.name})`, (syncCpu / busiest.ms).toFixed(2)],
      [`p50 at 1k writes/s to the last of 4 (${fan.writes} writes)`, fmtMs(fan.p50)],
      [`p99 at 1k writes/s to the last of 4 (target <= ${TARGET_P99_MS} ms)`, fmtMs(fan.p99)],
      ['max', fmtMs(fan.max)],
      ['slowest per 0.5 s', fan.worstPerHalfSecond.join(' ')],
      ['CPU ms per stage at 1k writes/s, all 4 healthy', pacedCpu],
      ['batch messages at 1k writes/s (events each)', `${pacedMsgs} (${(commits.size / pacedMsgs).toFixed(1)})`],
      ['isolated: slowest per 0.5 s', isolated.worstPerHalfSecond.join(' ')],
      ['CPU ms per stage at 1k writes/s, isolated', isolatedCpu],
      ['batch messages at 1k writes/s, isolated (events each)', `${isolatedMsgs} (${((commits2.size + 1) / isolatedMsgs).toFixed(1)})`],
      ['p99 to the last of 2 healthy, one SIGSTOPped, one suspended', fmtMs(isolated.p99)],
      [
        'the tampered subscriber suspended and exited',
        `${suspended} (${/TARGET_DIVERGED/.test(s3) ? 'TARGET_DIVERGED' : 'no reason logged'})`,
      ],
      ['the SIGSTOPped one caught up after SIGCONT in', `${stoppedCaughtUp} ms`],
      ['1-minute load average at the end (2 cores, shared)', os.loadavg()[0]?.toFixed(2) ?? '?'],
    ],
  )}\n`,
);
fs.mkdirSync(path.join(ROOT, 'bench', 'out'), { recursive: true });
fs.writeFileSync(
  path.join(ROOT, 'bench', 'out', 'fan-out.json'),
  `${JSON.stringify({ format: FORMAT, events: EVENTS, seconds: SECONDS, burstMsgs, pacedMsgs, isolatedMsgs, pacedCpu, isolatedCpu, syncRate, fanRate, syncCpuMs: syncCpu, stageCpuMs: stageCpu, fan, isolated, suspended, stoppedCaughtUpMs: stoppedCaughtUp }, null, 2)}\n`,
);
// Segments are their own figures (report.ts runs the bench once per format): `fan-out.segment.*`.
const fid = (id: string) => (FORMAT === 'jsonl' ? `fan-out.${id}` : `fan-out.segment.${id}`);
const fwhat = (w: string) => (FORMAT === 'jsonl' ? w : `${w}, segments`);
emitFigures(FORMAT === 'jsonl' ? 'fan-out' : 'fan-out-segment', [
  {
    id: fid('1k.p99'),
    target: ROW,
    what: fwhat(`p99 to the last of 4 targets at 1k writes/s (${fan.writes} writes)`),
    value: fan.p99,
    unit: 'ms',
    op: '<=',
    limit: TARGET_P99_MS,
  },
  {
    id: fid('1k.p50'),
    target: ROW,
    what: fwhat('p50 to the last of 4 targets at 1k writes/s'),
    value: fan.p50,
    unit: 'ms',
    op: 'none',
    limit: 0,
  },
  {
    id: fid('isolated.p99'),
    target: ROW,
    what: fwhat('p99 to the last of the 2 healthy targets while one subscriber is SIGSTOPped and one suspended'),
    value: isolated.p99,
    unit: 'ms',
    op: '<=',
    limit: TARGET_P99_MS,
  },
  {
    id: fid('throughput'),
    target: ROW,
    what: fwhat(`events/s to the last of 4 targets over sync's to one (${EVENTS} events; CPU: sync's per event over the busiest stage's)`),
    value: fanRate / syncRate,
    unit: 'x',
    op: '>=',
    limit: TARGET_RATIO,
    floor: { id: fid('sync-one-target'), what: 'sync --follow to one target, the same burst', perSecond: syncRate, unit: 'events/s' },
    cpu: syncCpu / busiest.ms,
  },
]);
if (KEEP) process.stdout.write(`kept ${dir}\n`);
else cleanup();
