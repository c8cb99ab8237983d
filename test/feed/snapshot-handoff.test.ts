// snapshot handoff with a writer in another process misses nothing
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, PYTHON } from '../support/fixtures.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { enable, status } from '../../src/capture/index.ts';
import { snapshot } from '../../src/feed/index.ts';
import { ReplayModel } from './support/replay.ts';

/*
 * Python's sqlite3 (knowing nothing of sluice) commits inserts, updates,
 * deletes and key changes with mixed storage classes in a loop, with some
 * rollbacks, while a deliberately slow snapshot runs in this process.
 */
const WRITER = String.raw`
import sqlite3, sys, time, random, os
path, stop = sys.argv[1], sys.argv[2]
rnd = random.Random(7)
con = sqlite3.connect(path, isolation_level=None, timeout=30)
def value():
    return rnd.choice([None, 0, -1, 2**63 - 1, -2**63, 1.0, 0.1, -2.5e300, '', 'a', 'A', 'h\u00e9llo \u2603',
                       b'', b'\x00\xff', bytes(rnd.getrandbits(8) for _ in range(rnd.randint(0, 40))),
                       rnd.randint(-10**12, 10**12), rnd.random()])
def bad_text():
    return bytes([0xff, 0xfe, rnd.getrandbits(7)])
def run(sql, args=()):
    try:
        con.execute(sql, args)
    except sqlite3.IntegrityError:
        pass
deadline = time.time() + 30  # safety net: the test normally stops it much sooner
commits = 0
first = True
while time.time() < deadline and not os.path.exists(stop):
    con.execute('BEGIN IMMEDIATE')
    for _ in range(rnd.randint(1, 8)):
        k = rnd.randint(1, 30000)
        op = rnd.random()
        if op < 0.3:
            run('INSERT INTO items (id, name, n, r, b, u) VALUES (?, ?, ?, ?, ?, ?)', (k, 'new-%d' % k, rnd.randint(-2**63, 2**63 - 1), rnd.random(), value(), value()))
        elif op < 0.55:
            run('UPDATE items SET name = ?, u = ? WHERE id = ?', ('upd-%d' % rnd.randint(0, 99), value(), k))
        elif op < 0.65:
            run('UPDATE items SET u = CAST(? AS TEXT) WHERE id = ?', (bad_text(), k))
        elif op < 0.8:
            run('DELETE FROM items WHERE id = ?', (k,))
        elif op < 0.87:
            run('UPDATE items SET id = ? WHERE id = ?', (rnd.randint(30001, 60000), k))
        elif op < 0.93:
            run('INSERT INTO pairs (a, b, v) VALUES (CAST(? AS TEXT), ?, ?)', (bad_text() if rnd.random() < 0.3 else ('k%d' % rnd.randint(0, 200)).encode(), rnd.randint(0, 5), value()))
        else:
            run('UPDATE pairs SET v = ? WHERE a IN (SELECT a FROM pairs ORDER BY random() LIMIT 1)', (value(),))
    if rnd.random() < 0.1:
        con.execute('ROLLBACK')
    else:
        con.execute('COMMIT')
        commits += 1
    if first and commits > 0:
        first = False
        print('ready', flush=True)
    time.sleep(0.002)
print('done', commits, flush=True)
`;

test('snapshot rows plus events replayed from its cursor equal the source while another process keeps committing', async ({
  makeDb,
  tmp,
}) => {
  const { db, file } = makeDb(
    'src.db',
    `
    CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, n INTEGER, r REAL, b BLOB, u);
    CREATE TABLE pairs (a TEXT NOT NULL, b INTEGER NOT NULL, v, PRIMARY KEY (a, b)) WITHOUT ROWID;
  `,
  );
  const ins = db.prepare('INSERT INTO items (id, name, n, r, b, u) VALUES (?, ?, ?, ?, ?, ?)');
  db.transaction(() => {
    for (let i = 1; i <= 30_000; i += 2)
      ins.run(i, `row-${i}`, BigInt(i) * 1_000_003n, i / 7, Buffer.from([i & 255, (i >> 8) & 255]), i % 3 === 0 ? `${i}` : i);
    // Malformed UTF-8 TEXT, in a value and in a WITHOUT ROWID key, must survive the snapshot as bytes.
    const pair = db.prepare('INSERT INTO pairs (a, b, v) VALUES (CAST(? AS TEXT), ?, CAST(? AS TEXT))');
    for (let i = 0; i < 50; i++) pair.run(Buffer.from([0xc3, 0x28, i]), i % 6, Buffer.from([0xff, i]));
    db.prepare('UPDATE items SET u = CAST(? AS TEXT) WHERE id % 101 = 0').run(Buffer.from([0xe2, 0x82]));
  })();
  enable(db, ['items', 'pairs']);

  const stopFile = path.join(tmp, 'stop');
  const writer = spawn(PYTHON, ['-c', WRITER, file, stopFile], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  writer.stdout.on('data', (d: Buffer) => (out += d.toString()));
  writer.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const exited = new Promise<number | null>((resolve) => writer.on('exit', (code) => resolve(code)));
  await new Promise<void>((resolve, reject) => {
    const poll = setInterval(() => {
      if (out.includes('ready')) {
        clearInterval(poll);
        resolve();
      }
      if (writer.exitCode !== null) {
        clearInterval(poll);
        reject(new Error(`writer died: ${err}`));
      }
    }, 5);
  });

  const reader = openDatabase(file, { readonly: true });
  const model = new ReplayModel();
  const pause = new Int32Array(new SharedArrayBuffer(4));
  let rowsSeen = 0;
  const seqBefore = status(reader).seq;
  const snap = snapshot(reader, ['items', 'pairs'], {
    onTable: (t) => model.table(t),
    onRow: (t, row) => {
      model.snapshotRow(t, row);
      // Slow consumer: ~1 ms every 25 rows keeps the read transaction open for a good part of the writer's run.
      if (++rowsSeen % 25 === 0) Atomics.wait(pause, 0, 0, 1);
    },
  });
  const seqAfter = status(reader).seq;
  // Let the writer commit some more after the snapshot, then stop it.
  while (status(reader).seq < seqAfter + 20 && writer.exitCode === null) await new Promise((r) => setTimeout(r, 10));
  fs.writeFileSync(stopFile, '');
  expect(await exited).toBe(0);
  expect(err).toBe('');

  // The writer committed before, during and after the snapshot's transaction.
  expect(snap.seq).toBeGreaterThanOrEqual(seqBefore);
  expect(seqAfter).toBeGreaterThan(snap.seq);
  const end = status(reader).seq;
  expect(end).toBeGreaterThan(seqAfter);

  const { batches } = model.catchUp(reader, snap.cursor, 97);
  for (const b of batches) expect(b.events.length).toBeLessThanOrEqual(97);
  // Every seq after the snapshot's high-water mark arrives exactly once, in order, with no gap.
  expect(model.seqs).toEqual(Array.from({ length: end - snap.seq }, (_, i) => snap.seq + 1 + i));
  expect(model.diff(reader)).toEqual([]);
  // The writer really produced the hard cases.
  const kinds = new Set(batches.flatMap((b) => b.events.map((e) => e.op)));
  expect([...kinds].sort()).toEqual(['delete', 'insert', 'update']);
  reader.close();
});
