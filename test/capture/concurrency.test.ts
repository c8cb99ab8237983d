import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { test, expect, describe, PYTHON } from '../support/fixtures.ts';
import { enable, bump, disable, status } from '../../src/capture/index.ts';
import { journalEvents, cell, type JournalEvent } from '../support/journal.ts';

/*
 * enable, bump and disable take SQLite's ordinary write lock, so they run
 * beside a live writer. A Python process commits one small transaction after
 * another (insert row i, bump a counter on row i-1) while this process
 * enables, bumps, disables and enables again, and writes rows of its own.
 * In each transaction Python also records which capture (source_id) was
 * installed, so we know exactly which of its writes must be journaled.
 */

const WRITER = `
import json, os, sqlite3, sys, time
db, stop = sys.argv[1], sys.argv[2]
conn = sqlite3.connect(db, timeout=10, isolation_level=None)
rows, errors, i = [], [], 0
deadline = time.time() + 20
while time.time() < deadline and not (os.path.exists(stop) and i >= 20):
    i += 1
    try:
        conn.execute('BEGIN IMMEDIATE')
        conn.execute('INSERT INTO t (id, v) VALUES (?, ?)', (i, 'py%d' % i))
        if i > 1:
            conn.execute('UPDATE t SET n = n + 1 WHERE id = ?', (i - 1,))
        has = conn.execute("SELECT count(*) FROM sqlite_schema WHERE name = '_sluice_state'").fetchone()[0]
        sid = conn.execute('SELECT source_id FROM _sluice_state').fetchone()[0] if has else None
        conn.execute('COMMIT')
        rows.append([i, sid])
    except Exception as e:
        errors.append(repr(e))
        if conn.in_transaction:
            conn.execute('ROLLBACK')
    time.sleep(0.001)
print(json.dumps({'rows': rows, 'errors': errors}))
`;

function runWriter(file: string, stopFile: string): Promise<{ rows: [number, string | null][]; errors: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(PYTHON, ['-c', WRITER, file, stopFile], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (err += d.toString()));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`python writer exited ${code}: ${err}`))));
  });
}

/** What the journal must hold for Python's transactions in one capture: insert i, then the counter update of row i-1. */
function expectedPythonEvents(ids: readonly number[]): string[] {
  return ids.flatMap((i) => (i > 1 ? [`insert:${i}`, `update:${i - 1}`] : [`insert:${i}`]));
}

const NODE_IDS = 1_000_000;
/** The integer key of an event (its first image column). */
const keyOf = (e: JournalEvent) => {
  const c = (e.after ?? e.before)?.[0] ?? '';
  if (!c.startsWith('integer:')) throw new Error(`unexpected key cell ${c}`);
  return Number(Buffer.from(c.slice('integer:'.length), 'hex').toString('latin1'));
};
const pythonOnly = (events: readonly JournalEvent[]) => events.filter((e) => keyOf(e) < NODE_IDS).map((e) => `${e.op}:${keyOf(e)}`);

describe('capture operations beside a live writer', () => {
  test('enable, bump, disable and enable again while Python commits in a loop: no write is lost on either side', async ({
    makeDb,
    tmp,
  }) => {
    const { db, file } = makeDb('live.db', 'CREATE TABLE t (id INTEGER PRIMARY KEY, v, n INTEGER NOT NULL DEFAULT 0)');
    const stopFile = path.join(tmp, 'stop');
    const writer = runWriter(file, stopFile);
    const count = () => Number((db.prepare('SELECT count(*) AS n FROM t').get() as { n: bigint }).n);
    const waitForRows = async (n: number) => {
      for (let k = 0; k < 500 && count() < n; k++) await sleep(10);
    };
    let nodeId = NODE_IDS;
    const nodeWrite = () => db.prepare('INSERT INTO t (id, v) VALUES (?, ?)').run(++nodeId, 'node');

    try {
      await waitForRows(10);
      const first = enable(db, ['t']);
      nodeWrite();
      await waitForRows(count() + 20);
      const bumped = bump(db, 'under load');
      nodeWrite();
      await waitForRows(count() + 20);
      // Read the first capture's journal and remove it in one write transaction.
      const firstEvents = db
        .transaction(() => {
          const events = journalEvents(db);
          disable(db);
          return events;
        })
        .immediate();
      nodeWrite(); // not captured
      await waitForRows(count() + 20);
      const second = enable(db, ['t']);
      nodeWrite();
      await waitForRows(count() + 20);
      fs.writeFileSync(stopFile, '');
      const py = await writer;

      expect(py.errors).toEqual([]);
      expect(first.created && second.created).toBe(true);
      expect(second.sourceId).not.toBe(first.sourceId);
      expect(bumped.generation).toBe(first.generation + 1);

      // Every committed write of both processes is in the table.
      const ids = (db.prepare('SELECT id FROM t ORDER BY id').all() as { id: bigint }[]).map((r) => Number(r.id));
      const pyIds = py.rows.map(([i]) => i);
      expect(ids).toEqual([...pyIds, NODE_IDS + 1, NODE_IDS + 2, NODE_IDS + 3, NODE_IDS + 4]);

      // Python's writes fall in four phases, in order: none, first capture, none, second capture.
      const phase = (sid: string | null) =>
        sid === null ? 'none' : sid === first.sourceId ? 'first' : sid === second.sourceId ? 'second' : `unknown ${sid}`;
      const phases = py.rows.map(([, sid]) => phase(sid)).filter((p, i, all) => i === 0 || p !== all[i - 1]);
      expect(phases).toEqual(['none', 'first', 'none', 'second']);

      // Each capture journaled exactly Python's writes made while it was installed, in commit order...
      const inPhase = (p: string) => py.rows.filter(([, sid]) => phase(sid) === p).map(([i]) => i);
      expect(pythonOnly(firstEvents)).toEqual(expectedPythonEvents(inPhase('first')));
      const secondEvents = journalEvents(db);
      expect(pythonOnly(secondEvents)).toEqual(expectedPythonEvents(inPhase('second')));
      // ...and this process's own writes made while it was installed.
      expect(firstEvents.filter((e) => e.after?.[1] === cell.text('node')).map((e) => e.after?.[0])).toEqual([
        cell.int(NODE_IDS + 1),
        cell.int(NODE_IDS + 2),
      ]);
      expect(secondEvents.filter((e) => e.after?.[1] === cell.text('node')).map((e) => e.after?.[0])).toEqual([cell.int(NODE_IDS + 4)]);
      // Seqs are strictly increasing within each capture.
      for (const events of [firstEvents, secondEvents])
        expect(events.every((e, i) => i === 0 || e.seq > (events[i - 1] as JournalEvent).seq)).toBe(true);
      expect(status(db)).toMatchObject({ sourceId: second.sourceId, generation: 1, tables: [{ name: 't', armed: true }] });
    } finally {
      fs.writeFileSync(stopFile, '');
      await writer.catch(() => undefined);
    }
  });
});
