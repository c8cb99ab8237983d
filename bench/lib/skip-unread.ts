import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { Syncer } from '../../src/apply/sync/sync.ts';
import { skipUnread } from '../../src/apply/projections/applier.ts';
import { enable } from '../../src/capture/enable.ts';
import { openDatabase } from '../../src/sqlite/connection.ts';
import type { ProjectionDefinition } from '../../src/projection/definition.ts';
import { prng } from '../../fixtures/tracker.ts';
import { median } from './workload.ts';

/*
 * Issue 22, item 3: an fts5 index over `title, body` of `issues`, and a
 * workload of updates of which 90% change only `comment_count` (a column
 * the index does not read) and 10% change `title`. The same events are
 * applied by the same code with the skip of unread updates on (the
 * default) and off (applier.ts `skipUnread`, as the code was before it),
 * alternating, each run on a fresh copy of the same post-snapshot target,
 * in the same process: the ratio is the median over rounds of off's time
 * over on's, each way's least of two runs in the round. Each update is of
 * another row (a random order of the rows, again when `updates` is more
 * than `rows`), as a follower applying small batches sees them: neither way
 * gets to fold two events of a row into one write. Every run's index is
 * checked against the source (not timed).
 */

export interface SkipUnreadOptions {
  readonly dir: string;
  readonly rows: number;
  readonly updates: number;
  readonly rounds: number;
  /** Words of each body (about 7 bytes a word). */
  readonly bodyWords: number;
  readonly log: (s: string) => void;
}

export interface SkipUnreadResult {
  readonly rows: number;
  readonly updates: number;
  readonly counterOnly: number;
  readonly bodyBytes: number;
  /** Per round: wall and CPU ms with skipping on and off (each the least of its runs in the round). */
  readonly runs: readonly { on: Run; off: Run }[];
  /** Median over rounds of off / on, wall and CPU. */
  readonly speedup: { readonly wall: number; readonly cpu: number };
}

interface Run {
  readonly ms: number;
  readonly cpuMs: number;
}

/** Runs of each way per round. */
const REPEATS = 2;

const FTS: ProjectionDefinition = { name: 'issues_fts', source: 'issues', kind: 'fts5', columns: ['title', 'body'], content: 'external' };

export async function runSkipUnread(o: SkipUnreadOptions): Promise<SkipUnreadResult> {
  const rand = prng(20261202);
  const vocabulary = Array.from({ length: 4000 }, (_, i) => `w${i.toString(36)}${'xyzq'.slice(0, i % 4)}`);
  const words = (n: number) => Array.from({ length: n }, () => vocabulary[Math.floor(rand() * vocabulary.length)]).join(' ');
  const file = (name: string) => path.join(o.dir, name);
  const src = file('skip-src.db');
  const db = openDatabase(src, { create: true, role: 'bench', wal: true });
  let counterOnly = 0;
  let bodyBytes = 0;
  try {
    db.pragma('synchronous = NORMAL');
    db.exec('CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT, body TEXT, comment_count INTEGER NOT NULL, state TEXT)');
    const ins = db.prepare('INSERT INTO issues VALUES (?, ?, ?, 0, ?)');
    db.transaction(() => {
      for (let id = 1; id <= o.rows; id++) {
        const body = words(o.bodyWords);
        bodyBytes += body.length;
        ins.run(BigInt(id), words(8), body, 'open');
      }
    })();
    enable(db, ['issues']);
  } finally {
    db.close();
  }
  const pristine = file('skip-pristine.db');
  const first = await Syncer.open(src, pristine, { projections: [FTS] });
  try {
    await first.runOnce();
  } finally {
    first.close();
  }
  const w = openDatabase(src, { role: 'bench' });
  try {
    const bump = w.prepare('UPDATE issues SET comment_count = comment_count + 1 WHERE id = ?');
    const retitle = w.prepare('UPDATE issues SET title = ? WHERE id = ?');
    // Rows in a random order, each once per pass over the table: no two updates of a pass on one row.
    const order: number[] = [];
    const nextRow = (): bigint => {
      if (order.length === 0) {
        for (let id = 1; id <= o.rows; id++) order.push(id);
        for (let i = order.length - 1; i > 0; i--) {
          const j = Math.floor(rand() * (i + 1));
          [order[i], order[j]] = [order[j] as number, order[i] as number];
        }
      }
      return BigInt(order.pop() as number);
    };
    for (let done = 0; done < o.updates;) {
      const chunk = Math.min(1000, o.updates - done);
      w.transaction(() => {
        for (let i = 0; i < chunk; i++) {
          const id = nextRow();
          if (rand() < 0.9) {
            bump.run(id);
            counterOnly++;
          } else retitle.run(words(8), id);
        }
      })();
      done += chunk;
    }
  } finally {
    w.close();
  }
  for (const p of [src, pristine]) {
    const c = openDatabase(p, { role: 'bench' });
    c.pragma('wal_checkpoint(TRUNCATE)');
    c.close();
  }

  let n = 0;
  const once = async (skip: boolean): Promise<Run> => {
    const target = file(`skip-run-${n++}.db`);
    fs.copyFileSync(pristine, target);
    const s = await Syncer.open(src, target, { projections: [FTS] });
    skipUnread.on = skip;
    const t0 = performance.now();
    const c0 = process.cpuUsage();
    try {
      const r = await s.runOnce();
      const p = r.projections[0];
      if (p?.state !== 'active' || p.error !== undefined) throw new Error(`skip bench (skip ${String(skip)}): ${JSON.stringify(p)}`);
    } finally {
      skipUnread.on = true;
      s.close();
    }
    const c = process.cpuUsage(c0);
    const run = { ms: performance.now() - t0, cpuMs: (c.user + c.system) / 1000 };
    const problem = checkIndex(src, target);
    if (problem !== undefined) throw new Error(`skip bench (skip ${String(skip)}): ${problem}`);
    for (const x of ['', '-wal', '-shm']) fs.rmSync(target + x, { force: true });
    return run;
  };
  // Each round runs each way REPEATS times, alternating (which goes first alternates by round), and keeps each way's least time:
  // the run least disturbed by other load on a shared machine.
  const runs: { on: Run; off: Run }[] = [];
  const least = (xs: readonly Run[]): Run => ({ ms: Math.min(...xs.map((x) => x.ms)), cpuMs: Math.min(...xs.map((x) => x.cpuMs)) });
  for (let r = 0; r < o.rounds; r++) {
    const on: Run[] = [];
    const off: Run[] = [];
    for (let i = 0; i < 2 * REPEATS; i++) {
      const skip = (i + r) % 2 === 0;
      (skip ? on : off).push(await once(skip));
    }
    const round = { on: least(on), off: least(off) };
    runs.push(round);
    o.log(
      `  skip-unread round ${r + 1}: skip on ${round.on.ms.toFixed(0)} ms, off ${round.off.ms.toFixed(0)} ms (least of ${REPEATS} each)`,
    );
  }
  return {
    rows: o.rows,
    updates: o.updates,
    counterOnly,
    bodyBytes: Math.round(bodyBytes / o.rows),
    runs,
    speedup: {
      wall: median(runs.map((x) => x.off.ms / x.on.ms)),
      cpu: median(runs.map((x) => x.off.cpuMs / x.on.cpuMs)),
    },
  };
}

/** The index against the source (not timed): the key table holds the source's values, and FTS5's integrity check passes against it. */
function checkIndex(src: string, target: string): string | undefined {
  const db = openDatabase(src, { role: 'bench' });
  try {
    db.prepare('ATTACH DATABASE ? AS tgt').run(target);
    const q = (a: string, b: string) => Number(db.prepare(`SELECT count(*) FROM (${a} EXCEPT ${b})`).pluck().get());
    const s = 'SELECT id, title, body FROM main.issues';
    const t = 'SELECT _k0, title, body FROM tgt.issues_fts_src';
    const d = q(s, t) + q(t, s);
    if (d > 0) return `${d} rows of the index's key table differ from the source`;
    db.exec("INSERT INTO tgt.issues_fts (issues_fts, rank) VALUES ('integrity-check', 1)");
    return undefined;
  } catch (err) {
    return String(err);
  } finally {
    db.close();
  }
}
