import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, expect, test } from 'vitest';
import { waitForChange } from '../../../src/pipeline/follow/index.ts';
import { openDatabase } from '../../../src/sqlite/index.ts';
import { PYTHON, runSqliteCli } from '../../support/fixtures.ts';

/*
 * A follower busy in a pass gets every file event queued meanwhile in one
 * turn of the event loop. After a burst that is thousands of events for
 * commits it has already applied; each one used to resume the wait, find
 * nothing new and spin (about 0.6 ms of short sleeps apiece), so a follower
 * spent about 13% of a core for seconds after a 30,000-row burst. A turn's
 * events must cost one look.
 */

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) fs.rmSync(d, { recursive: true, force: true });
});

// Between commits the writer appends to another file of the folder, as a follower's target beside
// its source does: the kernel merges repeated events for one file only when nothing came between.
const WRITER = `
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], isolation_level=None)
side = open(sys.argv[3], 'a')
for i in range(int(sys.argv[2])):
    c.execute('INSERT INTO t(name) VALUES (?)', ('x%d' % i,))
    side.write('x')
    side.flush()
`;

test('a backlog of file events after a burst costs one look per turn, not one per event', async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-wake-'));
  dirs.push(dir);
  const src = path.join(dir, 'src.db');
  runSqliteCli(src, 'PRAGMA journal_mode=WAL; CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT);');
  const db = openDatabase(src, { readonly: true });
  const count = db.prepare('SELECT count(*) FROM t').pluck();
  const ac = new AbortController();
  const rows = 3000;
  let passes = 0;
  let spins = 0;
  let spinsAfter = -1; // spins from the pass that saw the last row on
  const writer = spawn(PYTHON, ['-c', WRITER, src, String(rows), path.join(dir, 'side')], { stdio: 'ignore' });
  const wrote = new Promise<number | null>((resolve) => writer.on('exit', resolve));
  const waiting = waitForChange(
    db,
    src,
    () => {
      passes++;
      // A pass that keeps the thread 20 ms, as applying a batch does: the writer's events queue meanwhile.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 20);
      if (spinsAfter < 0 && Number(count.get() as bigint) === rows) spinsAfter = spins;
    },
    { signal: ac.signal, onSpin: () => spins++ },
  );
  expect(await wrote).toBe(0);
  // Let the queued events be delivered: the old wait spent seconds on them.
  await new Promise((r) => setTimeout(r, 1500));
  ac.abort();
  await waiting;
  expect(spinsAfter).toBeGreaterThanOrEqual(0); // the follower saw every row
  expect(passes).toBeGreaterThan(1);
  // Each turn of the event loop after the last pass is one look at most; a few turns, not thousands of events.
  expect(spins - spinsAfter).toBeLessThan(20);
  db.close();
}, 60_000);
