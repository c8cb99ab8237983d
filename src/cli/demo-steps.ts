import fs from 'node:fs';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { buildTracker, TRACKER_TABLES } from './demo-tracker.ts';
import {
  openSource,
  enable,
  status,
  openDatabase,
  sync,
  verify,
  health,
  loadDefinitions,
  type SyncReport,
  type ProjectionDefinition,
} from '../index.ts';
import { packageRoot } from './package-root.ts';
import { DEMO_DATABASES } from './demo-dir.ts';

export interface DemoStep {
  readonly step: string;
  readonly ok: boolean;
  readonly ms: number;
  readonly detail: string;
}

const DEMO_PROJECTIONS = [
  'repositories.json',
  'issues-mirror.json',
  'open-issues.json',
  'issues-search.json',
  'comments-search.json',
  'comment-counts.ts',
];

/** The external writer: Python's sqlite3, which knows nothing of sluice. */
const PYTHON_BURST = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("PRAGMA busy_timeout = 5000")
for i in range(int(sys.argv[2])):
    n = 1000 + i
    con.execute("INSERT INTO issues (repo_id, number, title, body, state, author, score, updated_at) VALUES (1, ?, ?, 'filed from python', 'open', 'py', 42.0, '2026-04-01')", (n, 'zeppelin sighting %d' % n))
    con.execute("INSERT INTO comments (repo_id, issue_number, author, body, created_at) VALUES (1, ?, 'py', 'first zeppelin comment', '2026-04-01')", (n,))
    con.commit()
con.execute("UPDATE issues SET state = 'closed', title = title || ' (closed)' WHERE repo_id = 2 AND number <= 10")
con.execute("DELETE FROM comments WHERE repo_id = 3 AND issue_number = 1")
con.commit()
print("ok")
`;

function python(): string | undefined {
  for (const exe of ['python3', 'python']) {
    const r = spawnSync(exe, ['-c', 'import sqlite3'], { encoding: 'utf8' });
    if (r.status === 0) return exe;
  }
  return undefined;
}

function timed(steps: DemoStep[], step: string, fn: () => string | { ok: boolean; detail: string }): boolean {
  const t = performance.now();
  let ok = true;
  let detail: string;
  try {
    const r = fn();
    if (typeof r === 'string') detail = r;
    else ({ ok, detail } = r);
  } catch (err) {
    ok = false;
    detail = err instanceof Error ? err.message : String(err);
  }
  steps.push({ step, ok, ms: Math.round(performance.now() - t), detail });
  return ok;
}

async function timedAsync(steps: DemoStep[], step: string, fn: () => Promise<{ ok: boolean; detail: string }>): Promise<boolean> {
  const t = performance.now();
  let r: { ok: boolean; detail: string };
  try {
    r = await fn();
  } catch (err) {
    r = { ok: false, detail: err instanceof Error ? err.message : String(err) };
  }
  steps.push({ step, ms: Math.round(performance.now() - t), ...r });
  return r.ok;
}

function searchCount(cache: string, term: string): number {
  const db = openDatabase(cache, { readonly: true, role: 'cache' });
  try {
    return Number(db.prepare('SELECT count(*) FROM issues_search WHERE issues_search MATCH ?').pluck().get(term) as bigint);
  } finally {
    db.close();
  }
}

function summarize(r: SyncReport): string {
  return r.projections
    .map(
      (p) =>
        `${p.name} ${p.state}${p.snapshotRows !== undefined ? ` ${p.snapshotRows} rows` : ''}${p.applied > 0 ? ` +${p.applied} events` : ''}`,
    )
    .join(', ');
}

/** How many steps runDemo has when every one runs. */
export const DEMO_STEP_COUNT = 10;

/** Runs the demo in `dir`; every step is checked, and the list says which passed. */
export async function runDemo(dir: string): Promise<DemoStep[]> {
  const steps: DemoStep[] = [];
  // Files of the demo's own (see prepareDemoDir): a run replaces them.
  const source = path.join(dir, DEMO_DATABASES.source);
  const cache = path.join(dir, DEMO_DATABASES.cache);
  for (const f of [cache, `${cache}-wal`, `${cache}-shm`]) fs.rmSync(f, { force: true });
  const root = packageRoot();
  const defs: ProjectionDefinition[] = [];

  if (
    !timed(steps, 'build fixture', () => {
      buildTracker(source);
      return `issue tracker at ${source}`;
    })
  )
    return steps;

  if (
    !timed(steps, 'enable capture', () => {
      const db = openSource(source);
      try {
        const r = enable(db, [...TRACKER_TABLES]);
        return `${r.added.join(', ')} captured (source ${r.sourceId.slice(0, 8)}, images mode)`;
      } finally {
        db.close();
      }
    })
  )
    return steps;

  if (
    !(await timedAsync(steps, 'initial sync (snapshot)', async () => {
      for (const f of DEMO_PROJECTIONS) defs.push(...(await loadDefinitions(path.join(root, 'projections', f))));
      const r = await sync(source, cache, { projections: defs });
      return { ok: r.projections.every((p) => p.state === 'active'), detail: summarize(r) };
    }))
  )
    return steps;

  const before = searchCount(cache, 'zeppelin');
  const py = python();
  if (
    !timed(steps, 'burst of writes from Python sqlite3', () => {
      if (py === undefined) return { ok: false, detail: 'python3 with sqlite3 is needed for the external writer' };
      const r = spawnSync(py, ['-c', PYTHON_BURST, source, '50'], { encoding: 'utf8' });
      return {
        ok: r.status === 0,
        detail: r.status === 0 ? '50 new issues + 50 comments, 10 issues closed, 1 thread deleted (100+ commits)' : r.stderr,
      };
    })
  )
    return steps;

  if (
    !(await timedAsync(steps, 'incremental sync', async () => {
      const r = await sync(source, cache, { projections: defs });
      const after = searchCount(cache, 'zeppelin');
      return {
        ok: r.projections.every((p) => p.state === 'active') && before === 0 && after === 50,
        detail: `${summarize(r)}; search "zeppelin": ${before} -> ${after} hits`,
      };
    }))
  )
    return steps;

  if (
    !(await timedAsync(steps, 'verify cache against source', async () => {
      const v = await verify(source, cache);
      return {
        ok: v.ok,
        detail: v.projections
          .map((p) => `${p.name} ${p.ok ? 'ok' : 'MISMATCH'}${p.reason === 'NOT_VERIFIABLE' ? ' (custom)' : ''}`)
          .join(', '),
      };
    }))
  )
    return steps;

  if (
    !timed(steps, 'crash mid-sync (SIGKILL before commit)', () => {
      if (py === undefined) return { ok: false, detail: 'python3 needed' };
      spawnSync(py, ['-c', PYTHON_BURST.replace('1000 + i', '2000 + i'), source, '20'], { encoding: 'utf8' });
      const args = [
        path.join(root, 'bin', 'sluice.js'),
        'sync',
        source,
        cache,
        ...DEMO_PROJECTIONS.flatMap((f) => ['--projection', path.join(root, 'projections', f)]),
      ];
      const r = spawnSync(process.execPath, args, { encoding: 'utf8', env: { ...process.env, SLUICE_CRASH_AT: 'before-commit' } });
      const killed = r.signal === 'SIGKILL' || r.status === 137 || (process.platform === 'win32' && r.status !== 0);
      return {
        ok: killed && searchCount(cache, 'zeppelin') === 50,
        detail: `sync process killed by ${r.signal ?? r.status}; the cache still shows the last committed state (50 hits)`,
      };
    })
  )
    return steps;

  if (
    !(await timedAsync(steps, 'resume after the crash', async () => {
      const r = await sync(source, cache, { projections: defs });
      const v = await verify(source, cache);
      const hits = searchCount(cache, 'zeppelin');
      return {
        ok: v.ok && hits === 70 && r.projections.every((p) => p.state === 'active'),
        detail: `resumed from each projection's cursor: ${summarize(r)}; search "zeppelin": ${hits} hits; verify ${v.ok ? 'ok' : 'FAILED'}`,
      };
    }))
  )
    return steps;

  if (
    !(await timedAsync(steps, 'tampered cache row: suspend, then --reinit', async () => {
      // Someone edits the cache by hand; then the source changes that row.
      const edit = openDatabase(cache, { role: 'cache' });
      try {
        edit.exec("UPDATE issues SET title = 'edited in the cache' WHERE repo_id = 1 AND number = 3");
      } finally {
        edit.close();
      }
      const src = openSource(source);
      try {
        src.exec("UPDATE issues SET title = 'retitled at the source' WHERE repo_id = 1 AND number = 3");
      } finally {
        src.close();
      }
      const caught = await sync(source, cache, { projections: defs });
      const issues = caught.projections.find((p) => p.name === 'issues');
      const look = openDatabase(cache, { readonly: true, role: 'cache' });
      let kept: unknown;
      try {
        kept = look.prepare('SELECT title FROM issues WHERE repo_id = 1 AND number = 3').pluck().get();
      } finally {
        look.close();
      }
      const others = caught.projections.filter((p) => p.name !== 'issues');
      const repaired = await sync(source, cache, { projections: defs, reinit: ['issues'] });
      const again = repaired.projections.find((p) => p.name === 'issues');
      const v = await verify(source, cache);
      return {
        ok:
          issues?.state === 'suspended' &&
          issues.reason === 'TARGET_DIVERGED' &&
          kept === 'edited in the cache' &&
          others.every((p) => p.state === 'active') &&
          again?.state === 'active' &&
          again.rebuilt === 'REINIT' &&
          v.ok,
        detail: `the next sync suspended issues with ${issues?.reason ?? '?'} at key ${JSON.stringify(issues?.detail?.key ?? null)} and committed none of its batch, while ${others.length} other projections went on; reinit issues rebuilt it from a snapshot (${again?.snapshotRows ?? '?'} rows); verify ${v.ok ? 'ok' : 'FAILED'}`,
      };
    }))
  )
    return steps;

  timed(steps, 'health and lag', () => {
    const h = health(cache);
    const src = openSource(source, { readonly: true });
    try {
      const s = status(src);
      return {
        ok: h.ok,
        detail: `source seq ${s.seq}, journal ${s.journalRows} rows; ${h.projections.map((p) => `${p.name} lag ${p.lagEvents ?? '?'}`).join(', ')}`,
      };
    } finally {
      src.close();
    }
  });
  return steps;
}
