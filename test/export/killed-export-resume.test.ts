// export killed at random points and resumed imports to exactly the source
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, PYTHON } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { prng } from '../../fixtures/tracker.ts';
import { runCliAsync, parseJson, makeDir, removeDir, trackerSource, dumpTables, startCli } from '../cli/support/cli.ts';

/*
 * An export SIGKILLed at random points while a writer runs, and resumed
 * each time, must leave a file that imports to exactly the source: a killed
 * run's torn line, partial batch or unsaved batch is cut on resume.
 * Batches of big rows (about 1.5 MB each) make the exporter flush inside a
 * batch, so kills land between a batch's writes as well as between batches.
 */

const TABLES = ['comments', 'issues', 'labels', 'repositories'];
const KILLS = 20;

// Writes until the stop file appears: big inserts, updates and deletes, one small transaction each.
const WRITER = `
import os, sqlite3, sys, time
con = sqlite3.connect(sys.argv[1], timeout=30)
stop = sys.argv[2]
i = 0
while not os.path.exists(stop):
    i += 1
    con.execute("INSERT INTO comments (id, repo_id, issue_number, author, body, created_at) VALUES (?, 1, 1, 'py', ?, '2026-06-01')", (100000 + i, ('w%d ' % i) * 1500))
    if i % 3 == 0:
        con.execute("UPDATE issues SET title = 'edit ' || ?, score = ? WHERE repo_id = 2 AND number = ?", (i, i / 7, 1 + i % 20))
    if i % 5 == 0:
        con.execute("DELETE FROM comments WHERE id = ?", (100000 + i - 4,))
    con.commit()
    if i % 50 == 0:
        time.sleep(0.01)
`;

let dir: string;
let src: string;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'));
});
afterAll(() => removeDir(dir));

describe.skipIf(process.platform === 'win32')('export under SIGKILL', () => {
  test(`killed ${KILLS} times at random points with a writer running and resumed, its file imports twice into a fresh target equal to the source byte for byte`, async () => {
    const out = at('killed.jsonl');
    const stop = at('stop');
    const writer = spawn(PYTHON, ['-c', WRITER, src, stop], { stdio: ['ignore', 'ignore', 'pipe'] });
    let writerErr = '';
    writer.stderr.setEncoding('utf8').on('data', (d: string) => (writerErr += d));
    const writerDone = new Promise<number | null>((resolve) => writer.on('close', resolve));
    const rand = prng(0x5eed11);
    try {
      for (let k = 0; k < KILLS; k++) {
        const run = startCli(['export', src, '--out', out, '--follow', '--batch', '400', '--json']);
        // Node takes ~150 ms to start: kill anywhere from before the first write to well into the stream.
        await new Promise((r) => setTimeout(r, 150 + Math.floor(rand() * 600)));
        run.child.kill('SIGKILL');
        const exit = await run.exited;
        expect(exit.signal ?? exit.status, run.stderr()).toBe(exit.signal === null ? 0 : 'SIGKILL');
      }
    } finally {
      fs.writeFileSync(stop, '');
      expect(await writerDone, writerErr).toBe(0);
    }
    // The writer has stopped: one last run catches up to the source's end.
    const last = await runCliAsync(['export', src, '--out', out, '--batch', '1000', '--json']);
    expect(last.status, last.stderr).toBe(0);

    const target = at('target.db');
    const first = await runCliAsync(['import', target, out, '--json']);
    expect(first.status, first.stderr).toBe(0);
    expect(parseJson(first, S.importOutput).incompleteTail).toBe(0);
    const again = await runCliAsync(['import', target, out, '--json']);
    expect(again.status, again.stderr).toBe(0);
    expect(parseJson(again, S.importOutput).batchesApplied).toBe(0);
    const source = dumpTables(src, TABLES);
    expect(source.comments?.length).toBeGreaterThan(600);
    expect(dumpTables(target)).toEqual(source);
  });
});
