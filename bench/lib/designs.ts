/*
 * Journal designs for steady state (bench only; bench/journal-steady.ts
 * times them). Each is a scratch copy of the capture SQL of
 * src/capture/schema.ts and src/capture/triggers.ts for table t, with one
 * thing changed in how the journal is bounded or how seq is assigned. src/
 * stays the source of truth: `src` below is the real enable().
 *
 * Every design keeps the capture semantics (one event per real change, exact
 * no-op detection as in src, a clock per event, both images, a per-table
 * last seq unless its note says it is a lower bound) and a bounded journal
 * with an exact `pruned_through` (stored, or derived as the design says).
 */
import type { Db } from '../../src/sqlite/connection.ts';
import { enable } from '../../src/capture/enable.ts';
import { DEFAULT_RETENTION, PRUNE_TRIGGER, triggerNames } from '../../src/capture/schema.ts';
import { T_COLUMNS, WARM_PAST, fillJournal } from './steady.ts';
import type { Variant } from './workload.ts';

export type JournalState = 'fresh' | '1k' | '1m';
export const STATES: readonly JournalState[] = ['fresh', '1k', '1m'];
export const retentionOf = (s: JournalState) => (s === '1k' ? 1024 : DEFAULT_RETENTION);
/** Events in the journal before timing: none when fresh, else past the bound. */
export const filledOf = (s: JournalState) => (s === 'fresh' ? 0 : retentionOf(s) + WARM_PAST);

export interface Design {
  readonly name: string;
  readonly note: string;
  /** What readers and pruning semantics change against src. */
  readonly readers: string;
  /** Installs the design on t (enable() first for the real objects), with retention `r`. */
  readonly install: (db: Db, r: number) => void;
  /** Puts the journal `count` events past nothing, as a writer would have left it (count may exceed r). */
  readonly fill: (db: Db, count: number, r: number) => void;
  /** After the timed phases: a problem, or undefined when the journal is what it must be. */
  readonly check: (db: Db, newest: number, r: number) => string | undefined;
}

const ref = (prefix: 'NEW' | 'OLD') => T_COLUMNS.map((c) => `${prefix}."${c}"`);
const cols = (count: number) => Array.from({ length: count }, (_, i) => `c${i}`);
const CHANGED = T_COLUMNS.map((c) =>
  c === 'id' ? `OLD."id" IS NOT NEW."id"` : `(OLD."${c}" IS NOT NEW."${c}" COLLATE BINARY OR typeof(OLD."${c}") <> typeof(NEW."${c}"))`,
).join('\n  OR ');

/** Replaces t's capture triggers with ones whose body for an event is `body(op, values)`. */
function installTriggers(db: Db, body: (op: number, values: readonly string[]) => string): void {
  const n = triggerNames(1);
  for (const name of Object.values(n)) db.exec(`DROP TRIGGER IF EXISTS "${name}"`);
  db.exec(`CREATE TRIGGER "${n.insert}" AFTER INSERT ON t FOR EACH ROW BEGIN\n  ${body(1, ref('NEW'))}\nEND`);
  db.exec(
    `CREATE TRIGGER "${n.update}" AFTER UPDATE ON t FOR EACH ROW WHEN\n  ${CHANGED}\nBEGIN\n  ${body(2, [...ref('OLD'), ...ref('NEW')])}\nEND`,
  );
  db.exec(`CREATE TRIGGER "${n.delete}" AFTER DELETE ON t FOR EACH ROW BEGIN\n  ${body(3, ref('OLD'))}\nEND`);
}

const appendRow = (op: number, v: readonly string[]) =>
  `INSERT INTO _sluice_journal (tid, op, ts, ${cols(v.length).join(', ')}) VALUES (1, ${op}, julianday(), ${v.join(', ')});`;
const BUMP_LAST = 'UPDATE _sluice_last SET seq = last_insert_rowid() WHERE tid = 1;';

const one = (db: Db, sql: string) => db.prepare(sql).get() as Record<string, bigint | null>;

/**
 * The append journal (seq = rowid): newest seq, nothing below pruned_through,
 * no gap, at most r + slack kept. With `derived`, pruned_through is
 * max(stored, newest - r) (a design that does not write it per prune).
 */
function checkAppend(db: Db, newest: number, r: number, slack: number, derived = false, last = true): string | undefined {
  const s = one(
    db,
    `SELECT count(*) AS c, min(seq) AS lo, max(seq) AS hi, (SELECT ${derived ? `max(pruned_through, ${newest - r})` : 'pruned_through'} FROM _sluice_state) AS p, (SELECT seq FROM _sluice_last WHERE tid = 1) AS last FROM _sluice_journal`,
  );
  if (Number(s.hi) !== newest) return `newest seq ${s.hi}, expected ${newest}`;
  if (last && Number(s.last) !== newest) return `_sluice_last ${s.last}, expected ${newest}`;
  if (Number(s.lo) !== Number(s.p) + 1 || Number(s.c) !== newest - Number(s.p))
    return `journal ${s.lo}..${s.hi} (${s.c} rows) but pruned_through ${s.p}`;
  if (Number(s.c) > r + slack) return `${s.c} events kept for retention ${r} (+${slack})`;
  return undefined;
}

/** Fills an append journal; with `derived` (no prune trigger), prunes to exactly r and stores pruned_through as a one-off prune would. */
const fillAppend = (db: Db, count: number, r = 0, derived = false) => {
  fillJournal(db, count);
  db.prepare('UPDATE _sluice_last SET seq = ? WHERE tid = 1').run(count);
  if (derived && count > r) {
    db.prepare('DELETE FROM _sluice_journal WHERE seq <= ?').run(count - r);
    db.prepare('UPDATE _sluice_state SET pruned_through = ?').run(count - r);
  }
};

/** src's journal and triggers, with the prune trigger replaced by `prune` (SQL, or none). */
function appendDesign(
  name: string,
  note: string,
  readers: string,
  prune: (r: number) => string | null,
  slack: (r: number) => number,
  body = (op: number, v: readonly string[]) => `${appendRow(op, v)}\n  ${BUMP_LAST}`,
  o: { derived?: boolean; last?: boolean } = {},
): Design {
  return {
    name,
    note,
    readers,
    install: (db, r) => {
      enable(db, ['t'], r === DEFAULT_RETENTION ? {} : { retention: r });
      db.exec(`DROP TRIGGER ${PRUNE_TRIGGER}`);
      const p = prune(r);
      if (p !== null) db.exec(p);
      installTriggers(db, body);
    },
    fill: (db, count, r) => fillAppend(db, count, r, o.derived === true),
    check: (db, newest, r) => checkAppend(db, newest, r, slack(r), o.derived === true, o.last !== false),
  };
}

const pruneOnJournal = (interval: number) =>
  `CREATE TRIGGER ${PRUNE_TRIGGER} AFTER INSERT ON _sluice_journal WHEN NEW.seq % ${interval} = 0 BEGIN
  DELETE FROM _sluice_journal WHERE seq <= NEW.seq - (SELECT retention FROM _sluice_state);
  UPDATE _sluice_state SET pruned_through = max(pruned_through, NEW.seq - retention);
END`;

/** Prune interval retention/16, as a power of two, at least 1,024. */
const r16 = (r: number) => Math.max(1024, 2 ** Math.floor(Math.log2(r / 16)));

/*
 * The ring: R = retention fixed slots, slot = seq % R as the rowid, seq a
 * plain column. The next seq comes from a counter: row tid 0 of _sluice_last
 * (the global seq), bumped in the same statement as the table's own row, so
 * one UPDATE keeps both. The event then overwrites its slot in place; the
 * ring has no trigger and nothing is ever deleted.
 */
const RING_DDL = (width: number) =>
  `CREATE TABLE _sluice_ring (slot INTEGER PRIMARY KEY, seq INTEGER, tid INTEGER, op INTEGER, ts REAL, ${cols(width).join(', ')})`;
/*
 * `replace` is INSERT OR REPLACE. It is NOT valid: a conflict clause in a
 * trigger body is overridden by the outer statement's, so under a user's
 * INSERT OR IGNORE the slot write is silently skipped once the ring is full
 * (the event is lost), and under OR FAIL / OR ROLLBACK / OR ABORT the user's
 * write fails with "UNIQUE constraint failed: _sluice_ring.slot". `upsert`
 * (ON CONFLICT (slot) DO UPDATE) is not overridden, so it is what a ring must use.
 */
type RingWrite = 'replace' | 'upsert';
const ringRow = (r: number, op: number, v: readonly string[], from: number, write: RingWrite) => {
  const names = ['seq', 'tid', 'op', 'ts', ...cols(v.length)];
  const select = `SELECT seq % ${r}, seq, 1, ${op}, julianday(), ${v.join(', ')} FROM _sluice_last WHERE tid = ${from}`;
  if (write === 'replace') return `INSERT OR REPLACE INTO _sluice_ring (slot, ${names.join(', ')}) ${select};`;
  // Columns the event leaves NULL are set too: the slot may hold a wider event of the lap before.
  const all = ['seq', 'tid', 'op', 'ts', ...cols(2 * T_COLUMNS.length)];
  return `INSERT INTO _sluice_ring (slot, ${names.join(', ')}) ${select}\n    ON CONFLICT (slot) DO UPDATE SET ${all.map((c) => `${c} = excluded.${c}`).join(', ')};`;
};

function ringDesign(name: string, note: string, bump: string, lastRows: readonly number[], from = 0, write: RingWrite = 'replace'): Design {
  return {
    name,
    note,
    readers:
      'read (lo, hi] as at most two slot ranges, (lo % R, R-1] then [0, hi % R] (one when they do not wrap), each in rowid order; the high-water mark is the counter row (tid 0); pruned_through = max(stored, hw - R), derived, not written per prune; changing the retention rebuilds the ring (re-slots rows) and the triggers (R is in their SQL)',
    install: (db, r) => {
      enable(db, ['t'], r === DEFAULT_RETENTION ? {} : { retention: r });
      db.exec(`DROP TRIGGER ${PRUNE_TRIGGER}`);
      db.exec(RING_DDL(2 * T_COLUMNS.length));
      if (!lastRows.includes(1)) db.exec('DELETE FROM _sluice_last');
      db.exec('INSERT OR IGNORE INTO _sluice_last (tid, seq) VALUES (0, 0)');
      installTriggers(db, (op, v) => `${bump}\n  ${ringRow(r, op, v, from, write)}`);
    },
    fill: (db, count, r) => {
      const from = Math.max(1, count - r + 1);
      db.exec('BEGIN');
      db.prepare(
        `WITH RECURSIVE s(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM s WHERE i < ?)
         INSERT INTO _sluice_ring (slot, seq, tid, op, ts, c0, c1, c2, c3, c4) SELECT i % ?, i, 1, 1, julianday(), i, 'name-' || i, i, i / 3.0, randomblob(32) FROM s`,
      ).run(from, count, r);
      db.prepare(`UPDATE _sluice_last SET seq = ? WHERE tid IN (${lastRows.join(', ')})`).run(count);
      db.prepare('UPDATE _sluice_state SET pruned_through = ?').run(Math.max(0, count - r));
      db.exec('COMMIT');
    },
    check: (db, newest, r) => {
      const s = one(
        db,
        `SELECT count(*) AS c, min(seq) AS lo, max(seq) AS hi, sum(seq % ${r} <> slot) AS bad, (SELECT max(seq) FROM _sluice_last) AS hw FROM _sluice_ring`,
      );
      if (Number(s.hw) !== newest || Number(s.hi) !== newest) return `counter ${s.hw}, newest slot seq ${s.hi}, expected ${newest}`;
      const last = one(db, 'SELECT seq FROM _sluice_last WHERE tid = 1');
      if (lastRows.includes(1) && Number(last?.seq) !== newest) return `table last seq ${last?.seq}, expected ${newest}`;
      if (Number(s.bad) !== 0) return `${s.bad} rows out of their slot`;
      const kept = Math.min(r, newest);
      if (Number(s.c) !== kept || Number(s.lo) !== newest - kept + 1)
        return `ring holds ${s.c} rows from ${s.lo}, expected ${kept} from ${newest - kept + 1}`;
      return undefined;
    },
  };
}

export const DESIGNS: readonly Design[] = [
  {
    name: 'src',
    note: 'today: enable() as it is (prune trigger on the journal, every 1,024 seqs)',
    readers: 'none (today)',
    install: (db, r) => void enable(db, ['t'], r === DEFAULT_RETENTION ? {} : { retention: r }),
    fill: (db, count) => fillAppend(db, count),
    check: (db, newest, r) => checkAppend(db, newest, r, 1024),
  },
  appendDesign(
    'src-copy',
    "src's SQL rebuilt by this file (checks the scratch copy costs what src does)",
    'none',
    () => pruneOnJournal(1024),
    () => 1024,
  ),
  // Smaller, more frequent prunes: each prune's statement journal stays under SQLite's 64 KiB spill (see bench/prune-cost.ts).
  ...[1, 16, 64, 256].map((k) =>
    appendDesign(
      `prune-${k}`,
      `prune trigger every ${k} seqs`,
      `none; the journal holds up to retention + ${k}`,
      () => pruneOnJournal(k),
      () => k,
    ),
  ),
  appendDesign(
    'prune-8k',
    'prune trigger every 8,192 seqs',
    'none; the journal holds up to retention + 8,192',
    () => pruneOnJournal(8192),
    () => 8192,
  ),
  appendDesign(
    'prune-r16',
    'prune trigger every retention/16 seqs (a power of two, at least 1,024)',
    'none; the journal holds up to retention * 17/16',
    (r) => pruneOnJournal(r16(r)),
    (r) => r16(r),
  ),
  appendDesign(
    'prune-on-last',
    'no trigger on the journal; the prune runs from AFTER UPDATE ON _sluice_last WHEN NEW.seq % 1024 = 0',
    'none',
    () => `CREATE TRIGGER ${PRUNE_TRIGGER} AFTER UPDATE OF seq ON _sluice_last WHEN NEW.seq % 1024 = 0 BEGIN
  DELETE FROM _sluice_journal WHERE seq <= NEW.seq - (SELECT retention FROM _sluice_state);
  UPDATE _sluice_state SET pruned_through = max(pruned_through, NEW.seq - retention);
END`,
    () => 1024,
  ),
  appendDesign(
    'prune-inline-1',
    'no prune trigger; each capture trigger deletes the one event that falls out of retention (seq = new - R)',
    'none; the journal holds exactly retention events',
    () => null,
    () => 0,
    (op, v) =>
      `${appendRow(op, v)}\n  ${BUMP_LAST}\n  DELETE FROM _sluice_journal WHERE seq = last_insert_rowid() - (SELECT retention FROM _sluice_state);`,
    { derived: true },
  ),
  appendDesign(
    'no-prune',
    'src without any pruning (lower bound: unbounded, NOT valid)',
    'not valid',
    () => null,
    () => Number.POSITIVE_INFINITY,
  ),
  appendDesign(
    'no-last',
    'src without the _sluice_last upkeep (lower bound for the append journal)',
    'per-table last seq derived by readers from the journal',
    () => pruneOnJournal(1024),
    () => 1024,
    (op, v) => appendRow(op, v),
    { last: false },
  ),
  ringDesign(
    'ring',
    'NOT valid (INSERT OR REPLACE, see ringRow): ring of R fixed slots (slot = seq % R); one UPDATE bumps the global counter (row tid 0 of _sluice_last) and the table row; INSERT OR REPLACE into the slot',
    'UPDATE _sluice_last SET seq = (SELECT seq FROM _sluice_last WHERE tid = 0) + 1 WHERE tid IN (0, 1);',
    [0, 1],
  ),
  ringDesign(
    'ring-max',
    'the ring; one UPDATE sets the table row of _sluice_last to max(seq) + 1 over all its rows (row tid 0 keeps the seq of dropped tables), the slot write reads it back',
    'UPDATE _sluice_last SET seq = (SELECT max(seq) FROM _sluice_last) + 1 WHERE tid = 1;',
    [0, 1],
    1,
  ),
  ringDesign(
    'ring-max-upsert',
    'ring-max with the slot written by INSERT ... ON CONFLICT (slot) DO UPDATE (valid under any outer conflict clause; the replace form is not)',
    'UPDATE _sluice_last SET seq = (SELECT max(seq) FROM _sluice_last) + 1 WHERE tid = 1;',
    [0, 1],
    1,
    'upsert',
  ),
  ringDesign(
    'ring-nolast-upsert',
    'ring-nolast with the upsert slot write (lower bound: no per-table last seq)',
    'UPDATE _sluice_last SET seq = seq + 1 WHERE tid = 0;',
    [0],
    0,
    'upsert',
  ),
  ringDesign(
    'ring-nolast',
    'the ring with the global counter only (no per-table last seq: lower bound)',
    'UPDATE _sluice_last SET seq = seq + 1 WHERE tid = 0;',
    [0],
  ),
];

/** One timed variant: a design on a journal in state `s`. */
export function designVariant(d: Design, s: JournalState, rows: number): Variant {
  const r = retentionOf(s);
  const filled = filledOf(s);
  return {
    name: `${d.name}@${s}`,
    note: d.note,
    setup: (db) => {
      d.install(db, r);
      if (filled > 0) d.fill(db, filled, r);
    },
    check: (db) => d.check(db, filled + 3 * rows, r),
  };
}
