/*
 * What the checks on a custom handler's queries cost a custom batch: the
 * source guard (a statement that would write the source is refused, from
 * its EXPLAIN, once per statement text while the schemas stay as they were)
 * and the end of each call (a query through a call's ctx after it returned
 * is refused; each page ends with one turn of the event loop).
 *
 *   npx tsx bench/custom-handler.ts [--events N (20000)] [--base N (10000)] [--rounds N (5)]
 *
 * One process. A source t(id INTEGER PRIMARY KEY, name TEXT, n INTEGER) with
 * `--base` rows, capture enabled, then `--events` mixed writes (50% inserts,
 * 35% updates, 15% deletes); the events are read from the journal once, in
 * pages of 10,000 (the custom kind's page), untimed. Timed, on a connection
 * opened as sync opens it (openApplySession: the source as main, the target
 * attached), in a transaction that reads the source first and is rolled back
 * afterwards (so every variant applies the same events to the same target):
 * - guarded: sluice's own path (applyCustomEvents: each call's own ctx.db,
 *   every statement checked);
 * - plain: the same handler over the same events with a plain Kysely on the
 *   same connection (SqliteDialect, names resolved in the target), nothing
 *   checked: the same run without the guard;
 * - reused: plain, but with each statement text prepared once and reused
 *   (as guarded does; Kysely's own driver prepares every query afresh), so
 *   guarded / reused is what the checks alone cost;
 * - released: plain, plus the check of the released code (the source's
 *   schema_version read before and after each page).
 * Each variant's target rows are compared with plain's before the rollback.
 * Two handlers: a Kysely mirror of t (a delete and an insert per event, by
 * the query builder: a few statement texts), and the same mirror written
 * with its values inlined into raw SQL (sql.raw: a new statement text per
 * event, so every statement is checked afresh: the guard's worst case).
 * Each round runs the variants in a rotating order; a ratio is the median
 * over rounds of guarded / plain (wall and this process's CPU time). Bench
 * only: nothing is judged.
 */
import type { Statement } from 'better-sqlite3';
import { Kysely, SqliteDialect, sql } from 'kysely';
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { openApplySession, TARGET_SCHEMA } from '../src/apply/target/session.ts';
import { enable } from '../src/capture/enable.ts';
import { openDatabase } from '../src/sqlite/connection.ts';
import { journalBatch } from '../src/feed/change-batch.ts';
import { readSourceView } from '../src/feed/source-view.ts';
import { compileAgainstSource } from '../src/projection/expression-probe.ts';
import { applyCustomEvents } from '../src/projection/kinds/custom/handler.ts';
import type { CompiledCustom } from '../src/projection/compiled.ts';
import type { CustomContext, CustomHandler } from '../src/projection/definition.ts';
import type { ChangeEvent } from '../src/feed/events.ts';
import { toBindable } from '../src/sqlite/codec.ts';
import { prng } from '../fixtures/tracker.ts';
import { intFlag, makeScratch, median, renderTable, fmtRatio } from './lib/workload.ts';

const argv = process.argv.slice(2);
if (argv.includes('--help') || argv.includes('-h')) {
  process.stdout.write('usage: npx tsx bench/custom-handler.ts [--events N (20000)] [--base N (10000)] [--rounds N (5)]\n');
  process.exit(0);
}
const EVENTS = intFlag(argv, 'events', 20_000);
const BASE = intFlag(argv, 'base', 10_000);
const ROUNDS = intFlag(argv, 'rounds', 5);
const PAGE = 10_000;
const scratch = makeScratch('sluice-bench-custom-');

const COLS = ['id', 'name', 'n'] as const;
const values = (row: Record<string, unknown>) => Object.fromEntries(COLS.map((c) => [c, toBindable((row[c] ?? null) as never)]));

const builder: CustomHandler = {
  version: '1',
  async apply(e, { db }) {
    if (e.before !== null)
      await db
        .deleteFrom('tcustom')
        .where('id', '=', toBindable((e.before.id ?? null) as never))
        .execute();
    if (e.after !== null) await db.insertInto('tcustom').values(values(e.after)).execute();
  },
};

const literal = (v: unknown) => (v === null ? 'NULL' : typeof v === 'string' ? `'${v.replace(/'/g, "''")}'` : String(v));
const inlined: CustomHandler = {
  version: '1',
  async apply(e, { db }) {
    if (e.before !== null) await sql.raw(`DELETE FROM tcustom WHERE id = ${literal(e.before.id)}`).execute(db);
    if (e.after !== null) {
      const v = values(e.after);
      await sql.raw(`INSERT INTO tcustom VALUES (${COLS.map((c) => literal(v[c])).join(', ')})`).execute(db);
    }
  },
};

function makeSource(): string {
  const file = path.join(scratch.dir, 'src.db');
  const db = openDatabase(file, { create: true, role: 'bench', wal: true });
  db.exec('CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, n INTEGER)');
  const ins = db.prepare('INSERT INTO t VALUES (?, ?, ?)');
  db.transaction(() => {
    for (let i = 1; i <= BASE; i++) ins.run(i, `name ${i}`, i);
  })();
  enable(db, ['t']);
  const rand = prng(7);
  const live: number[] = Array.from({ length: BASE }, (_, i) => i + 1);
  let next = BASE + 1;
  const upd = db.prepare('UPDATE t SET name = ?, n = ? WHERE id = ?');
  const del = db.prepare('DELETE FROM t WHERE id = ?');
  for (let done = 0; done < EVENTS;) {
    db.transaction(() => {
      for (let k = 0; k < 1000 && done < EVENTS; k++, done++) {
        const r = rand();
        if (r < 0.5 || live.length === 0) {
          ins.run(next, `name ${next}`, next);
          live.push(next++);
        } else if (r < 0.85) {
          const id = live[Math.floor(rand() * live.length)] as number;
          upd.run(`renamed ${done}`, done, id);
        } else {
          const at = Math.floor(rand() * live.length);
          del.run(live[at] as number);
          live[at] = live[live.length - 1] as number;
          live.pop();
        }
      }
    })();
  }
  db.close();
  return file;
}

interface Cost {
  readonly wall: number;
  readonly cpu: number;
}

type Variant = 'guarded' | 'plain' | 'reused' | 'released';
const VARIANTS: readonly Variant[] = ['guarded', 'plain', 'reused', 'released'];

async function main(): Promise<void> {
  const src = makeSource();
  const target = path.join(scratch.dir, 'tgt.db');
  const s = openApplySession(src, target);
  const db = s.db;
  db.exec(`CREATE TABLE ${TARGET_SCHEMA}.tcustom (id INTEGER PRIMARY KEY, name TEXT, n INTEGER)`);
  const view = readSourceView(db);
  const table = view.tables.get('t')?.table;
  if (table === undefined) throw new Error('t is not captured');
  const pages: (readonly ChangeEvent[])[] = [...journalBatch(db, table, 0, view.hw).pages(PAGE)].map((p) => [...p]);
  const events = pages.reduce((n, p) => n + p.length, 0);
  const plainKysely: CustomContext['db'] = new Kysely({ dialect: new SqliteDialect({ database: db }) }).withSchema(TARGET_SCHEMA);
  const prepared = new Map<string, Statement>();
  const reusing = {
    close: () => {},
    prepare(text: string) {
      let stmt = prepared.get(text);
      if (stmt === undefined) {
        if (prepared.size >= 64) prepared.delete(prepared.keys().next().value as string);
        stmt = db.prepare(text);
        prepared.set(text, stmt);
      }
      return stmt;
    },
  };
  const reusedKysely: CustomContext['db'] = new Kysely({ dialect: new SqliteDialect({ database: reusing }) }).withSchema(TARGET_SCHEMA);
  const digest = db
    .prepare(`SELECT count(*) || ' ' || total(id) || ' ' || total(n) || ' ' || total(length(name)) FROM ${TARGET_SCHEMA}.tcustom`)
    .pluck();
  let expected: unknown;
  const schemaVersion = db.prepare('SELECT schema_version FROM main.pragma_schema_version()').pluck();

  async function run(handler: CustomHandler, variant: Variant): Promise<Cost> {
    const p = compileAgainstSource(db, { name: 'tcustom', source: 't', kind: 'custom', handler }) as CompiledCustom;
    const ctx: CustomContext = { db: variant === 'reused' ? reusedKysely : plainKysely, projection: p.name, tables: {} };
    db.exec('BEGIN');
    try {
      db.prepare('SELECT count(*) FROM main.t').get(); // the batch's read of the source, as sync's
      const c0 = process.cpuUsage();
      const t0 = performance.now();
      for (const page of pages) {
        if (variant === 'guarded') await applyCustomEvents(db, TARGET_SCHEMA, p, page);
        else {
          const before = variant === 'released' ? schemaVersion.get() : undefined;
          for (const e of page) await handler.apply(e, ctx);
          if (variant === 'released' && schemaVersion.get() !== before) throw new Error('schema changed');
        }
      }
      const wall = performance.now() - t0;
      const c = process.cpuUsage(c0);
      const got = digest.get();
      if (variant === 'plain') expected = got;
      else if (got !== expected) throw new Error(`${variant}: target ${String(got)}, plain made ${String(expected)}`);
      return { wall, cpu: (c.user + c.system) / 1000 };
    } finally {
      db.exec('ROLLBACK');
    }
  }

  const rows: string[][] = [];
  const out: Record<string, unknown> = {};
  for (const [name, handler] of [
    ['builder (a few statement texts)', builder],
    ['inlined raw SQL (a text per event)', inlined],
  ] as const) {
    const costs: Record<Variant, Cost[]> = { guarded: [], plain: [], reused: [], released: [] };
    await run(handler, 'plain'); // warm-up
    await run(handler, 'guarded');
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < VARIANTS.length; i++) {
        const v = VARIANTS[(i + round) % VARIANTS.length] as Variant;
        costs[v].push(await run(handler, v));
      }
    }
    const ratio = (v: Variant, k: keyof Cost, base: Variant = 'plain') =>
      median(costs[v].map((c, i) => c[k] / (costs[base][i] as Cost)[k]));
    const perEvent = (v: Variant) => (median(costs[v].map((c) => c.wall)) / events) * 1000;
    rows.push([
      name,
      perEvent('plain').toFixed(1),
      perEvent('guarded').toFixed(1),
      fmtRatio(ratio('guarded', 'wall')),
      fmtRatio(ratio('guarded', 'cpu')),
      fmtRatio(ratio('guarded', 'wall', 'reused')),
      fmtRatio(ratio('guarded', 'cpu', 'reused')),
      fmtRatio(ratio('released', 'wall')),
    ]);
    out[name] = {
      events,
      plainUsPerEvent: perEvent('plain'),
      guardedUsPerEvent: perEvent('guarded'),
      guardedOverPlain: ratio('guarded', 'wall'),
      guardedOverPlainCpu: ratio('guarded', 'cpu'),
      guardedOverReused: ratio('guarded', 'wall', 'reused'),
      guardedOverReusedCpu: ratio('guarded', 'cpu', 'reused'),
      releasedOverPlain: ratio('released', 'wall'),
    };
  }
  s.close();
  process.stdout.write(`custom handler checks: ${events} events in pages of ${PAGE}, ${ROUNDS} rounds (medians)\n`);
  process.stdout.write(
    renderTable(
      [
        'handler',
        'plain µs/event',
        'guarded µs/event',
        'guarded/plain wall',
        'guarded/plain cpu',
        'guarded/reused wall',
        'guarded/reused cpu',
        'released/plain wall',
      ],
      rows,
    ),
  );
  process.stdout.write(`\n${JSON.stringify(out)}\n`);
}

try {
  await main();
} finally {
  scratch.cleanup();
}
