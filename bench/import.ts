/*
 * Import against sync (DESIGN.md, restated for issue 23: import of JSONL
 * >= 0.45x sync of the same events, import of a segment >= 0.85x; peak RSS
 * <= 200 MB):
 *
 *   npx tsx bench/import.ts [--rows 1000000] [--events 1000000]
 *
 * One source t(id INTEGER PRIMARY KEY, name TEXT, n INTEGER, r REAL) with
 * `--rows` rows, captured (images mode). Then, each as a CLI subprocess under
 * /usr/bin/time (wall seconds and peak RSS):
 * - snapshot: `sync` into a fresh target, against `export` of the snapshot
 *   and `import` of that file into another fresh target (a 1M-row file);
 * - events: `--events` mixed writes (60% inserts, 30% updates, 10% deletes,
 *   1,000 per transaction), exported by resuming the same export, then
 *   `sync` catching its target up, against `import` of the file into the
 *   other (which skips the snapshot it already has and applies the batches).
 * The same snapshot and events are also exported as segments (a folder:
 * the snapshot's segment, then one of the events), and the events' segment
 * is imported into a third target (docs/segment.md).
 * Wall seconds give importVsSync (the judged ratio); user + sys seconds give
 * cpuImportVsSync (the figure's `cpu`), which other load on a shared machine
 * disturbs less; sync's events/s is the figure's floor. The events' import
 * reads the file's snapshot again, which the target holds: its rows are
 * digested and counted, not parsed (export/held-lines.ts).
 * Both targets are compared at the end (they must be equal). Figures before
 * and after issue 11, and where import's time goes: docs/jsonl.md, "Import
 * speed". The export is
 * not timed against anything: it is how the file is made.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { openDatabase } from '../src/sqlite/connection.ts';
import { enable } from '../src/capture/enable.ts';
import { emitFigures } from './lib/figures.ts';

const arg = (name: string, d: number) => {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? d : Number(process.argv[i + 1]);
};
const ROWS = arg('rows', 1_000_000);
const EVENTS = arg('events', 1_000_000);
/** Rounds of sync against segment import, alternating, each on a fresh copy of its target: the medians are the figures. */
const ROUNDS = Math.max(1, arg('rounds', 3));
const BIN = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'bin', 'sluice.js');
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-bench-import-'));
const at = (f: string) => path.join(dir, f);

function timed(args: string[]): { seconds: number; cpuSeconds: number; rssMb: number } {
  const r = spawnSync('/usr/bin/time', ['-f', '%e %M %U %S', process.execPath, BIN, ...args, '--json'], {
    encoding: 'utf8',
    maxBuffer: 1 << 26,
  });
  const last = r.stderr.trim().split('\n').at(-1) ?? '';
  if (r.status !== 0) throw new Error(`sluice ${args.join(' ')} failed (${r.status}): ${r.stderr}`);
  const [s, kb, user, sys] = last.split(' ').map(Number) as [number, number, number, number];
  return { seconds: s, cpuSeconds: +(user + sys).toFixed(2), rssMb: Math.round(kb / 1024) };
}

function rand(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = Math.imul(a ^ (a >>> 15), a | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

try {
  const src = at('src.db');
  const db = openDatabase(src, { create: true });
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER, r REAL)');
  const ins = db.prepare('INSERT INTO t VALUES (?, ?, ?, ?)');
  db.transaction(() => {
    for (let i = 1; i <= ROWS; i++) ins.run(i, `row ${i} of the snapshot`, i * 7, i / 3);
  })();
  enable(db, ['t'], { retention: Math.max(2 * EVENTS, 1_000_000) });
  db.close();

  const file = at('stream.jsonl');
  timed(['export', src, '--out', file]);
  const snapSync = timed(['sync', src, at('synced.db')]);
  const snapImport = timed(['import', at('imported.db'), file]);
  // The same snapshot as a segment (the folder's first), into a third target.
  const segs = at('segments');
  timed(['export', src, '--out', segs, '--format', 'segment']);
  const snapSegImport = timed(['import', at('seg-imported.db'), segs]);

  const w = openDatabase(src);
  const r = rand(11);
  let next = ROWS + 1;
  const upd = w.prepare('UPDATE t SET name = ?, n = n + 1 WHERE id = ?');
  const del = w.prepare('DELETE FROM t WHERE id = ?');
  const ins2 = w.prepare('INSERT INTO t VALUES (?, ?, ?, ?)');
  let done = 0;
  while (done < EVENTS) {
    w.transaction(() => {
      for (let k = 0; k < 1000 && done < EVENTS; k++) {
        const x = r();
        const id = 1 + Math.floor(r() * (next - 1));
        if (x < 0.6) ins2.run(next++, `new ${next}`, next, r());
        else if (x < 0.9) upd.run(`upd ${done}`, id);
        else del.run(id);
        done = Number(w.prepare('SELECT max(seq) FROM main._sluice_journal').pluck().get() ?? 0);
      }
    })();
  }
  w.close();
  const exp = timed(['export', src, '--out', file]);
  const segExp = timed(['export', src, '--out', segs, '--format', 'segment']);
  // The events' segment alone (the snapshot's one is in the target already).
  const eventsSegment = path.join(segs, fs.readdirSync(segs).sort().at(-1) as string);
  // Interleaved rounds (a shared machine's load shifts): each on a copy of its target as it was before the events.
  const copy = (from: string, to: string) => {
    const d = openDatabase(from, { readonly: true });
    try {
      d.exec(`VACUUM INTO '${to.replaceAll("'", "''")}'`);
    } finally {
      d.close();
    }
  };
  copy(at('synced.db'), at('synced-base.db'));
  copy(at('seg-imported.db'), at('seg-base.db'));
  const syncs: ReturnType<typeof timed>[] = [];
  const segImports: ReturnType<typeof timed>[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    const last = round === ROUNDS - 1;
    const syncTarget = last ? at('synced.db') : at(`synced-${round}.db`);
    const segTarget = last ? at('seg-imported.db') : at(`seg-imported-${round}.db`);
    if (!last) {
      for (const [base, t] of [
        [at('synced-base.db'), syncTarget],
        [at('seg-base.db'), segTarget],
      ] as const) {
        for (const f of [t, `${t}-wal`, `${t}-shm`]) fs.rmSync(f, { force: true });
        copy(base, t);
      }
    }
    syncs.push(timed(['sync', src, syncTarget]));
    segImports.push(timed(['import', segTarget, eventsSegment]));
  }
  const median = (xs: ReturnType<typeof timed>[]) => {
    const by = (k: 'seconds' | 'cpuSeconds') => [...xs].sort((a, b) => a[k] - b[k])[Math.floor(xs.length / 2)]?.[k] ?? 0;
    return { seconds: by('seconds'), cpuSeconds: by('cpuSeconds'), rssMb: Math.max(...xs.map((x) => x.rssMb)) };
  };
  const evSync = median(syncs);
  const evSegImport = median(segImports);
  const evImport = timed(['import', at('imported.db'), file]);

  const dump = (f: string) => {
    const d = openDatabase(f, { readonly: true });
    try {
      return d
        .prepare("SELECT count(*) || ':' || total(n) || ':' || group_concat(id, ',') FROM (SELECT * FROM t ORDER BY id)")
        .pluck()
        .get();
    } finally {
      d.close();
    }
  };
  const same = dump(at('synced.db')) === dump(at('imported.db')) && dump(at('synced.db')) === dump(at('seg-imported.db'));
  emitFigures('import', [
    {
      id: 'import.events.vs-sync',
      target: 'import: JSONL >= 0.45x sync of the same events',
      what: `import of ${EVENTS} events (the file's ${ROWS}-row snapshot held), speed over sync of the same events (CLI, wall)`,
      value: evSync.seconds / evImport.seconds,
      unit: 'x',
      op: '>=',
      limit: 0.45,
      cpu: evSync.cpuSeconds / evImport.cpuSeconds,
      floor: {
        id: 'import.sync-events',
        what: `sync of the same ${EVENTS} events (CLI, wall)`,
        perSecond: EVENTS / evSync.seconds,
        unit: 'events/s',
      },
    },
    {
      id: 'import.segment.vs-sync',
      target: 'import of a segment vs sync of the same events',
      what: `import of ${EVENTS} events as one segment (export --format segment), speed over sync of the same events (CLI, wall; median of ${ROUNDS} interleaved rounds)`,
      value: evSync.seconds / evSegImport.seconds,
      unit: 'x',
      op: '>=',
      limit: 0.85,
      cpu: evSync.cpuSeconds / evSegImport.cpuSeconds,
    },
    {
      id: 'import.rss',
      target: 'import: peak RSS <= 200 MB',
      what: `peak RSS of import (${ROWS}-row snapshot file, then ${EVENTS} events)`,
      value: Math.max(snapImport.rssMb, evImport.rssMb, snapSegImport.rssMb, evSegImport.rssMb),
      unit: 'MB',
      op: '<=',
      limit: 200,
    },
  ]);
  console.log(
    JSON.stringify(
      {
        rows: ROWS,
        events: EVENTS,
        fileMb: Math.round(fs.statSync(file).size / 2 ** 20),
        snapshot: {
          sync: snapSync,
          import: snapImport,
          importVsSync: +(snapSync.seconds / snapImport.seconds).toFixed(2),
          cpuImportVsSync: +(snapSync.cpuSeconds / snapImport.cpuSeconds).toFixed(2),
        },
        events_: {
          export: exp,
          sync: { ...evSync, eventsPerS: Math.round(EVENTS / evSync.seconds) },
          import: { ...evImport, eventsPerS: Math.round(EVENTS / evImport.seconds) },
          importVsSync: +(evSync.seconds / evImport.seconds).toFixed(2),
          cpuImportVsSync: +(evSync.cpuSeconds / evImport.cpuSeconds).toFixed(2),
          segment: {
            export: segExp,
            bytes: fs.statSync(eventsSegment).size,
            import: { ...evSegImport, eventsPerS: Math.round(EVENTS / evSegImport.seconds) },
            importVsSync: +(evSync.seconds / evSegImport.seconds).toFixed(2),
            cpuImportVsSync: +(evSync.cpuSeconds / evSegImport.cpuSeconds).toFixed(2),
            rounds: { sync: syncs, import: segImports },
          },
        },
        targetsEqual: same,
      },
      null,
      1,
    ),
  );
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
