/*
 * The named capture variants the shape experiments compare (bench only).
 * bench/journal-shapes.ts times them; bench/shape-instructions.ts counts the
 * instructions SQLite executes for them under valgrind.
 */
import type { Db } from '../../src/sqlite/connection.ts';
import { enable } from '../../src/capture/enable.ts';
import { chronicleDdl, type Variant } from './workload.ts';
import { experimentVariants } from './cap-experiments.ts';
import { DEFAULT_SHAPE, describeShape, installShape, setRetention, type Shape } from './shapes.ts';

export interface VariantOptions {
  /** Set this retention after enable, so pruning really deletes within the run (0 = keep the default). */
  readonly retention?: number;
  /** Add this many INTEGER columns to t before capture is installed. */
  readonly wide?: number;
  /** Give t a secondary UNIQUE index on name (src then adds its REPLACE guards). */
  readonly unique?: boolean;
}

/** The best shape found that keeps every semantic of src (see docs/journal.md). */
export const BEST: Partial<Shape> = { lastSeq: 'none', ts: 'jd', when: 'exact-ipk', notNull: 'drop' };

/** Every variant; the first is the no-capture baseline. */
export function shapeVariants(o: VariantOptions = {}): Variant[] {
  const retention = o.retention ?? 0;
  const wide = o.wide ?? 0;
  const widen = (db: Db) => {
    for (let i = 0; i < wide; i++) db.exec(`ALTER TABLE t ADD COLUMN x${i} INTEGER DEFAULT ${i}`);
    if (o.unique === true) db.exec('CREATE UNIQUE INDEX t_name ON t(name)');
  };
  const shape = (name: string, knobs: Partial<Shape>, note = ''): Variant => {
    const s: Shape = { ...DEFAULT_SHAPE, ...knobs };
    return {
      name,
      note: note === '' ? describeShape(s) : note,
      setup: (db) => {
        widen(db);
        installShape(db, 't', s);
        if (retention > 0) setRetention(db, retention);
      },
    };
  };
  return [
    { name: 'none', note: 'no capture (baseline)', setup: widen },
    ...experimentVariants().map((v) => ({
      ...v,
      setup: (db: Db) => {
        v.setup(db);
        if (retention > 0 && v.name.startsWith('x-')) setRetention(db, retention);
      },
    })),
    shape('src', {}),
    {
      name: 'enable',
      note: "src's enable() as it is, untouched (images)",
      setup: (db) => {
        widen(db);
        enable(db, ['t']);
        if (retention > 0) setRetention(db, retention);
      },
    },
    {
      name: 'enable-probe',
      note: "enable(), REPLACE guards' WHEN probing for a conflict before reading pragma_recursive_triggers()",
      setup: (db) => {
        widen(db);
        enable(db, ['t']);
        probeFirst(db);
        if (retention > 0) setRetention(db, retention);
      },
    },
    {
      name: 'enable-lazy',
      note: 'enable-probe with the pragma subqueries correlated (so not hoisted): read only on a conflict or a noted row',
      setup: (db) => {
        widen(db);
        enable(db, ['t']);
        probeFirst(db, true);
        lazyFlush(db);
        if (retention > 0) setRetention(db, retention);
      },
    },
    shape('last-none', { lastSeq: 'none' }),
    shape('last-narrow', { lastSeq: 'narrow' }),
    shape('last-index', { lastSeq: 'index' }),
    shape('prune-none', { prune: 'none' }, 'prune=none (lower bound: no pruning)'),
    shape('prune-inline', { prune: 'inline' }),
    shape('ts-jd', { ts: 'jd' }),
    shape('ts-ms', { ts: 'ms' }),
    shape('ts-const', { ts: 'const' }, 'ts=0.0 (lower bound: no clock)'),
    shape('when-ipk', { when: 'exact-ipk' }),
    shape('when-plain', { when: 'plain' }, 'when=plain (lower bound: not exact)'),
    shape('pad40', { pad: 40 }, 'journal 40 columns wider than t needs'),
    shape('nn-drop', { notNull: 'drop' }),
    shape('last-none-nn', { lastSeq: 'none', notNull: 'drop' }),
    shape('best', BEST),
    shape('best-inline', { ...BEST, prune: 'inline' }),
    shape('best-index', { ...BEST, lastSeq: 'index' }),
    shape('best-narrow', { ...BEST, lastSeq: 'narrow' }),
    shape('best-noprune', { ...BEST, prune: 'none' }, 'best without pruning (lower bound, not valid)'),
    shape(
      'floor-clock',
      { lastSeq: 'none', prune: 'none', ts: 'jd', when: 'plain', notNull: 'drop' },
      'floor + julianday(): any function call opens a statement journal',
    ),
    shape(
      'floor',
      { lastSeq: 'none', prune: 'none', ts: 'const', when: 'plain', notNull: 'drop' },
      'floor: journal insert only (not valid)',
    ),
    shape('keys-src', { mode: 'keys' }),
    shape('keys-best', { ...BEST, mode: 'keys' }),
    {
      name: 'chronicle',
      note: 'reference 004 triggers',
      setup: (db) => {
        widen(db);
        for (const sql of chronicleDdl()) db.exec(sql);
      },
    },
  ];
}

const RECURSIVE_OFF = '(SELECT recursive_triggers FROM pragma_recursive_triggers()) = 0';

/*
 * src's REPLACE guards (BEFORE triggers on tables with secondary UNIQUE
 * indexes) read pragma_recursive_triggers() in their WHEN for every row, and
 * that table-valued pragma prepares a statement on each call. This rewrite
 * reads the pragma only when the guard has something to do: a row the new
 * values conflict with, or stale notes of this table to clear. Otherwise the
 * original guard would delete nothing and note nothing, so the outcome is the
 * same. The probe is one EXISTS per constraint: inside a trigger, an OR of
 * terms that carry an explicit COLLATE is planned as a full scan (measured),
 * while each term alone uses its index.
 */
function probeFirst(db: Db, correlate = false): void {
  const rows = db
    .prepare(
      "SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND (name LIKE '%\\_bins' ESCAPE '\\' OR name LIKE '%\\_bupd' ESCAPE '\\')",
    )
    .all() as { name: string; sql: string }[];
  for (const r of rows) {
    const m = /DELETE FROM _sluice_pending WHERE tid = (\d+);.*FROM ("(?:[^"]|"")+") WHERE (.*);\nEND$/s.exec(r.sql);
    if (m === null || !r.sql.includes(`WHEN ${RECURSIVE_OFF} BEGIN`)) throw new Error(`unexpected guard trigger shape: ${r.sql}`);
    const [, tid, table, where] = m as unknown as [string, string, string, string];
    // bins: "(a) OR (b)"; bupd: "NOT (k) AND ((a) OR (b))".
    const upd = /^(NOT \(.*?\)) AND \((.*)\)$/s.exec(where);
    const also = upd === null ? '' : `${upd[1] as string} AND `;
    const terms = (upd === null ? where : (upd[2] as string)).slice(1, -1).split(') OR (');
    const probes = terms.map((t) => `EXISTS (SELECT 1 FROM ${table} WHERE ${also}(${t}))`).join(' OR ');
    // An uncorrelated subquery is hoisted and runs on every invocation whatever
    // the WHEN short-circuits; a (trivially true) reference to NEW keeps it in place.
    const newRef = /NEW\.("(?:[^"]|"")+")/.exec(where)?.[1] ?? '"rowid"';
    const pragma = correlate
      ? `(SELECT recursive_triggers FROM pragma_recursive_triggers() WHERE NEW.${newRef} IS NEW.${newRef}) = 0`
      : RECURSIVE_OFF;
    const when = `WHEN (${probes} OR EXISTS (SELECT 1 FROM _sluice_pending WHERE tid = ${tid})) AND ${pragma} BEGIN`;
    db.exec(`DROP TRIGGER "${r.name}"`);
    db.exec(r.sql.replace(`WHEN ${RECURSIVE_OFF} BEGIN`, when));
  }
}

/*
 * The AFTER trigger's flush of REPLACE notes ends its WHERE with the same
 * uncorrelated pragma subquery, which SQLite evaluates once per statement,
 * that is once per event, even when there is no note to flush. Correlating it
 * with the note row makes it run only for notes that exist.
 */
function lazyFlush(db: Db): void {
  const rows = db
    .prepare(
      "SELECT name, sql FROM sqlite_schema WHERE type = 'trigger' AND (name LIKE '%\\_ins' ESCAPE '\\' OR name LIKE '%\\_upd' ESCAPE '\\') AND sql LIKE '%_sluice_pending%'",
    )
    .all() as { name: string; sql: string }[];
  for (const r of rows) {
    const lazy = r.sql.replace(
      `AND ${RECURSIVE_OFF} ORDER BY rowid;`,
      'AND (SELECT recursive_triggers FROM pragma_recursive_triggers() WHERE _sluice_pending.tid IS NOT NULL) = 0 ORDER BY rowid;',
    );
    if (lazy === r.sql) throw new Error(`unexpected flush shape: ${r.sql}`);
    db.exec(`DROP TRIGGER "${r.name}"`);
    db.exec(lazy);
  }
}
