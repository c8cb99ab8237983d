// a table's last seq and changed since stay exact while the journal's tick folds events into _sluice_last every 16 seqs
import fc from 'fast-check';
import { test, expect } from '../support/fixtures.ts';
import { enable, status } from '../../src/capture/index.ts';
import { readBatch, journalStartCursor, changedSince } from '../../src/feed/index.ts';

/*
 * Since format 4 the capture triggers no longer write _sluice_last: its
 * rows are a checkpoint, moved by the journal's tick every 16 seqs, and a
 * table's last seq is its row or its newest event after the checkpoint.
 * Against a model that reads every committed event: after any mix of
 * writes to three tables (committed, rolled back, or partly rolled back to a
 * savepoint, crossing tick and prune boundaries at retention 1,024), each
 * table's last seq is its newest event's, and changedSince from the
 * previous batch's cursor is true exactly for the tables written since.
 */

const TABLES = ['a', 'b', 'c'] as const;
type Write = { readonly table: number; readonly op: 'insert' | 'update' | 'delete'; readonly id: number };
type Step = { readonly writes: readonly Write[]; readonly end: 'commit' | 'rollback' | 'savepoint' };

const write: fc.Arbitrary<Write> = fc.record({
  table: fc.integer({ min: 0, max: 2 }),
  op: fc.constantFrom('insert' as const, 'update' as const, 'delete' as const),
  id: fc.integer({ min: 1, max: 30 }),
});
const step: fc.Arbitrary<Step> = fc.record({
  writes: fc.array(write, { minLength: 0, maxLength: 70 }),
  end: fc.constantFrom('commit' as const, 'commit' as const, 'rollback' as const, 'savepoint' as const),
});

test('last seq and changedSince match a model of the committed events, across ticks, rollbacks and pruning', ({ makeDb }) => {
  let run = 0;
  fc.assert(
    fc.property(fc.array(step, { minLength: 1, maxLength: 40 }), (steps) => {
      const { db } = makeDb(`p${run++}.db`, TABLES.map((t) => `CREATE TABLE ${t} (id INTEGER PRIMARY KEY, v);`).join('\n'));
      try {
        enable(db, [...TABLES], { retention: 1024 });
        const tidOf = new Map(
          (db.prepare('SELECT tid, name FROM _sluice_tables').all() as { tid: bigint; name: string }[]).map((r) => [Number(r.tid), r.name]),
        );
        const last = new Map<string, number>(TABLES.map((t) => [t, 0]));
        let cursor = journalStartCursor(db, [...TABLES]);
        let hw = 0;
        let n = 0;
        const apply = (w: Write) => {
          const t = TABLES[w.table] as string;
          n++;
          if (w.op === 'insert') db.prepare(`INSERT OR REPLACE INTO ${t} VALUES (?, ?)`).run(w.id, n);
          else if (w.op === 'update') db.prepare(`UPDATE ${t} SET v = ? WHERE id = ?`).run(n, w.id);
          else db.prepare(`DELETE FROM ${t} WHERE id = ?`).run(w.id);
        };
        for (const s of steps) {
          db.exec('BEGIN');
          const half = Math.floor(s.writes.length / 2);
          s.writes.slice(0, half).forEach(apply);
          if (s.end === 'savepoint') db.exec('SAVEPOINT sp');
          s.writes.slice(half).forEach(apply);
          if (s.end === 'savepoint') db.exec('ROLLBACK TO sp; RELEASE sp');
          db.exec(s.end === 'rollback' ? 'ROLLBACK' : 'COMMIT');
          // The model: every event committed since the last step.
          const fresh = db.prepare('SELECT seq, tid FROM _sluice_journal WHERE seq > ? ORDER BY seq').all(hw) as {
            seq: bigint;
            tid: bigint;
          }[];
          const written = new Set<string>();
          for (const e of fresh) {
            const name = tidOf.get(Number(e.tid)) as string;
            last.set(name, Number(e.seq));
            written.add(name);
          }
          const seen = new Map(status(db).tables.map((t) => [t.name, t.lastSeq]));
          for (const t of TABLES) {
            expect(seen.get(t), `last seq of ${t}`).toBe(last.get(t));
            expect(changedSince(db, cursor, [t]).changed, `changed since, ${t}`).toBe(written.has(t));
          }
          expect(changedSince(db, cursor).changed).toBe(written.size > 0);
          const batch = readBatch(db, cursor, { limit: 100_000 });
          cursor = batch.to;
          hw = fresh.length > 0 ? Number((fresh.at(-1) as { seq: bigint }).seq) : hw;
        }
      } finally {
        db.close();
      }
    }),
    { numRuns: 12 },
  );
});
