/*
 * Soak (issue 14): everything at once, for minutes, with crashes.
 *
 *   npx tsx bench/soak.ts [--minutes N (5)] [--kill-every S (20)] [--keep]
 *
 * Not part of npm test or npm run bench (it runs for minutes): run by hand;
 * it writes bench/results/soak.md and bench/out/soak.json. Needs dist/ (npm
 * run build) and nats-server (/usr/sbin/nats-server or NATS_SERVER).
 *
 * One source with items(id, k UNIQUE, v, n) and docs(id, title, body),
 * captured (images mode). Two writer processes (bench/lib/soak-writer.py,
 * Python sqlite3, one with recursive_triggers OFF, one ON) commit a mixed
 * workload: INSERT OR REPLACE (which can delete two rows, with no delete
 * trigger fired when recursive_triggers is off), upserts, key changes,
 * range deletes, and one transaction in ten rolled back. Followers:
 * `sync --follow` into a mirror target and into an fts5 target (docs),
 * `publish --follow` to a real nats-server, and two `subscribe --follow`
 * (mirrors). Every --kill-every seconds the next of these five, in turn, and
 * the nats-server after them, is SIGKILLed and started again. At the end the
 * writers stop, everything is given time to catch up (every target at the
 * source's seq), the followers are stopped (SIGTERM), and `sluice verify`
 * compares every target with the source. Divergences (keys missing, extra or
 * different, or a projection not verified) must be 0, and no follower may
 * have exited by itself.
 */
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import Database from 'better-sqlite3';
import { NatsServer } from '../test/support/nats-server.ts';
import { BIN, Proc, ROOT, sleep, sourceSeq, targetSeq, until } from './lib/fleet.ts';
import { intFlag, makeScratch, renderTable } from './lib/workload.ts';

const argv = process.argv.slice(2);
const MINUTES = intFlag(argv, 'minutes', 5);
const KILL_EVERY_S = intFlag(argv, 'kill-every', 20);
const KEEP = argv.includes('--keep');

const { dir, cleanup } = makeScratch('sluice-soak-');
const at = (f: string) => path.join(dir, f);
const cli = (...args: string[]) => execFileSync(process.execPath, [BIN, ...args], { cwd: ROOT, encoding: 'utf8' });

const src = at('source.db');
execFileSync(
  'python3',
  [
    '-c',
    `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.executescript("""
CREATE TABLE items (id INTEGER PRIMARY KEY, k TEXT UNIQUE, v TEXT, n INTEGER);
CREATE TABLE docs (id INTEGER PRIMARY KEY, title TEXT, body TEXT);
""")
con.executemany("INSERT INTO items VALUES (?, ?, 'seed', 0)", [(i, 'k%d' % i) for i in range(1, 1001)])
con.executemany("INSERT INTO docs VALUES (?, 'seed', 'seed text')", [(i,) for i in range(0, 500)])
con.commit()`,
    src,
  ],
  { stdio: 'inherit' },
);
cli('enable', src, 'items', 'docs');
const sourceId = (JSON.parse(cli('status', src, '--json')) as { sourceId: string }).sourceId;
fs.writeFileSync(
  at('docs-fts.json'),
  JSON.stringify({ name: 'docs_fts', source: 'docs', kind: 'fts5', columns: ['title', 'body'], content: 'external' }),
);

const nats = await NatsServer.start({ storeDir: at('nats') });
const targets = { mirror: at('mirror.db'), fts: at('fts.db'), sub1: at('sub1.db'), sub2: at('sub2.db') };
const log = (name: string) => at(`${name}.log`);
const procs = [
  new Proc('sync-mirror', ['sync', src, targets.mirror, '--follow'], log('sync-mirror')),
  new Proc('sync-fts', ['sync', src, targets.fts, '--projection', at('docs-fts.json'), '--follow'], log('sync-fts')),
  new Proc('publish', ['publish', src, '--nats', nats.url, '--batch', '200', '--follow'], log('publish')),
  new Proc('subscribe-1', ['subscribe', targets.sub1, '--nats', nats.url, '--source', sourceId, '--follow'], log('subscribe-1')),
  new Proc('subscribe-2', ['subscribe', targets.sub2, '--nats', nats.url, '--source', sourceId, '--follow'], log('subscribe-2')),
];
const [syncMirror, syncFts, publish, sub1, sub2] = procs as [Proc, Proc, Proc, Proc, Proc];
const targetOf = new Map<Proc, string>([
  [syncMirror, targets.mirror],
  [syncFts, targets.fts],
  [sub1, targets.sub1],
  [sub2, targets.sub2],
]);

for (const p of [syncMirror, syncFts, publish]) p.start();
if (!(await until(() => fs.readFileSync(publish.log, 'utf8').includes('published a snapshot'), 30_000)))
  throw new Error(`publish made no snapshot; see ${publish.log}`);
for (const p of [sub1, sub2]) p.start();

const stopFile = at('writers.stop');
const writers = [0, 1].map((i) => {
  const out = fs.openSync(at(`writer-${i}.log`), 'w');
  const w = spawn('python3', [path.join(ROOT, 'bench', 'lib', 'soak-writer.py'), src, stopFile, String(7 + i), String(i), '3'], {
    stdio: ['ignore', out, out],
  });
  fs.closeSync(out);
  return new Promise<void>((resolve) => w.on('exit', () => resolve()));
});

let natsRestarts = 0;
let maxLag = 0;
const maxLagBy = new Map<string, number>();
const revived: string[] = [];
const started = Date.now();
const end = started + MINUTES * 60_000;
let nextKill = started + KILL_EVERY_S * 1000;
let turn = 0;
process.stdout.write(`soak: ${MINUTES} min in ${dir}, a crash every ${KILL_EVERY_S} s\n`);
while (Date.now() < end) {
  await sleep(500);
  for (const p of procs) p.sample();
  const s = sourceSeq(src);
  for (const [p, t] of targetOf) {
    const lag = s - targetSeq(t);
    if (targetSeq(t) >= 0) {
      maxLag = Math.max(maxLag, lag);
      maxLagBy.set(p.name, Math.max(maxLagBy.get(p.name) ?? 0, lag));
    }
  }
  for (const p of procs) if (p.reviveIfDead()) revived.push(`${p.name}: ${p.unexpectedExits.at(-1) ?? ''}`);
  if (Date.now() >= nextKill) {
    nextKill += KILL_EVERY_S * 1000;
    const victim = turn++ % (procs.length + 1);
    if (victim === procs.length) {
      await nats.kill();
      await sleep(1000);
      await nats.restart();
      natsRestarts++;
      process.stdout.write(`  ${Math.round((Date.now() - started) / 1000)} s: nats-server killed and restarted\n`);
    } else {
      const p = procs[victim] as Proc;
      await p.crash();
      process.stdout.write(`  ${Math.round((Date.now() - started) / 1000)} s: ${p.name} killed and restarted\n`);
    }
  }
}

fs.writeFileSync(stopFile, '');
await Promise.all(writers);
const finalSeq = sourceSeq(src);
const caughtUp = await until(
  () => {
    for (const p of procs) {
      p.sample();
      if (p.reviveIfDead()) revived.push(`${p.name} (catching up): ${p.unexpectedExits.at(-1) ?? ''}`);
    }
    return [...targetOf.values()].every((t) => targetSeq(t) === finalSeq);
  },
  180_000,
  200,
);
const catchUpS = (Date.now() - started) / 1000 - MINUTES * 60;
for (const p of procs) await p.stop('SIGTERM');
await nats.dispose();

interface Verified {
  ok: boolean;
  projections: { name: string; ok: boolean; checked: number; diffs: unknown[]; reason?: string; skipped?: string }[];
}
const verified = Object.entries(targets).map(([name, t]) => {
  let out: string;
  try {
    out = cli('verify', src, t, '--json');
  } catch (err) {
    out = String((err as { stdout?: string }).stdout ?? '');
  }
  const v = JSON.parse(out) as Verified;
  const divergences = v.projections.reduce((n, p) => n + p.diffs.length + (p.ok || p.diffs.length > 0 ? 0 : 1), 0);
  return { name, ok: v.ok, divergences, keys: v.projections.reduce((n, p) => n + p.checked, 0), seq: targetSeq(t) };
});
const writerStats = [0, 1].map(
  (i) =>
    JSON.parse(
      fs
        .readFileSync(at(`writer-${i}.log`), 'utf8')
        .trim()
        .split('\n')
        .at(-1) ?? '{}',
    ) as Record<string, number>,
);
const applied = (t: string) => {
  const db = new Database(t, { readonly: true });
  try {
    return Number((db.prepare('SELECT sum(applied_events) AS n FROM main._sluice_projections').get() as { n: number | null }).n ?? 0);
  } finally {
    db.close();
  }
};

const divergences = verified.reduce((n, v) => n + v.divergences, 0);
const result = {
  minutes: MINUTES,
  killEverySeconds: KILL_EVERY_S,
  eventsWritten: finalSeq,
  writers: writerStats,
  caughtUp,
  catchUpSeconds: Math.round(catchUpS * 10) / 10,
  maxLagEvents: maxLag,
  natsRestarts,
  processes: procs.map((p) => ({
    name: p.name,
    restarts: p.restarts,
    unexpectedExits: p.unexpectedExits,
    peakRssMb: Math.round(p.peakRssKb / 102.4) / 10,
    maxLagEvents: maxLagBy.get(p.name) ?? null,
    eventsApplied: targetOf.has(p) ? applied(targetOf.get(p) as string) : null,
  })),
  verified,
  divergences,
};
fs.mkdirSync(path.join(ROOT, 'bench', 'out'), { recursive: true });
fs.writeFileSync(path.join(ROOT, 'bench', 'out', 'soak.json'), `${JSON.stringify(result, null, 2)}\n`);

const md = [
  `# Soak: ${MINUTES} minutes`,
  '',
  `Run ${new Date(started).toISOString()} with \`npx tsx bench/soak.ts --minutes ${MINUTES}\` (bench/soak.ts says what it does).`,
  '',
  `- events written (source seq at the end): ${finalSeq}; writer transactions: ${writerStats.map((w) => `${w.committed} committed, ${w.rolledBack} rolled back, ${w.failed} failed`).join('; ')}`,
  `- a SIGKILL every ${KILL_EVERY_S} s: nats-server killed and restarted ${natsRestarts} times`,
  `- every target at the source's seq after the writers stopped: ${caughtUp ? `yes, ${result.catchUpSeconds} s later` : 'NO (timed out after 180 s)'}`,
  `- max lag seen (source seq minus target seq, sampled every 0.5 s): ${maxLag} events`,
  `- divergences: **${divergences}**`,
  '',
  renderTable(
    ['process', 'SIGKILL + restart', 'exited by itself', 'peak RSS MB', 'max lag (events)', 'applied_events of its target'],
    result.processes.map((p) => [
      p.name,
      String(p.restarts),
      p.unexpectedExits.length === 0 ? '0' : `${p.unexpectedExits.length}: ${p.unexpectedExits.join('; ')}`,
      String(p.peakRssMb),
      p.maxLagEvents === null ? '-' : String(p.maxLagEvents),
      p.eventsApplied === null ? '-' : String(p.eventsApplied),
    ]),
  ),
  '',
  renderTable(
    ['target', 'verify', 'keys checked', 'divergences', 'seq'],
    verified.map((v) => [v.name, v.ok ? 'ok' : 'NOT OK', String(v.keys), String(v.divergences), String(v.seq)]),
  ),
  '',
].join('\n');
fs.mkdirSync(path.join(ROOT, 'bench', 'results'), { recursive: true });
fs.writeFileSync(path.join(ROOT, 'bench', 'results', 'soak.md'), md);
process.stdout.write(`\n${md}\n`);
if (KEEP) process.stdout.write(`kept ${dir}\n`);
else if (divergences === 0 && caughtUp) cleanup();
else process.stdout.write(`kept ${dir} (divergences or no catch-up)\n`);
process.exit(divergences === 0 && caughtUp && revived.length === 0 ? 0 : 1);
