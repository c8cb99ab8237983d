// export follow stops on sigterm with every batch complete and its cursor saved
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll, afterEach } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { exportLineSchema, positionOf, readResumePoint } from '../../src/export/index.ts';
import {
  runCliAsync,
  parseJson,
  makeDir,
  removeDir,
  trackerSource,
  write,
  sourceSeq,
  startCli,
  waitFor,
  type Spawned,
} from './support/cli.ts';

let dir: string;
let src: string;
let running: Spawned | undefined;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'), ['comments']);
});
afterEach(() => {
  if (running !== undefined && running.child.exitCode === null && running.child.signalCode === null) running.child.kill('SIGKILL');
  running = undefined;
});
afterAll(() => removeDir(dir));

// Windows has no SIGTERM to catch: child.kill() there terminates the process outright.
describe.skipIf(process.platform === 'win32')('export --follow', () => {
  test('SIGTERM during its first run exits 0 with a summary, every batch complete and the cursor file at the last one', async () => {
    const out = at('stream.jsonl');
    const snap = await runCliAsync(['export', src, '--out', out, '--json']);
    expect(snap.status, snap.stderr).toBe(0);
    const snapshotSize = fs.statSync(out).size;

    // 60 events, exported one per batch (each batch is flushed and fsynced, then its cursor saved).
    write(src, "UPDATE comments SET body = body || ' (follow)' WHERE id <= 60");
    running = startCli(['export', src, '--out', out, '--follow', '--batch', '1', '--json']);
    const f = running;
    await waitFor('the first batch on disk', () => fs.statSync(out).size > snapshotSize);
    f.child.kill('SIGTERM');
    const exit = await f.exited;
    expect(exit, f.stderr()).toEqual({ status: 0, signal: null });
    const summary = parseJson({ stdout: f.stdout(), stderr: f.stderr() }, S.exportOutput);
    expect(summary.rows).toBe(0);
    expect(summary.events).toBe(summary.batches);
    expect(summary.events).toBeGreaterThan(0);

    const lines = fs
      .readFileSync(out, 'utf8')
      .trimEnd()
      .split('\n')
      .map((l) => exportLineSchema.parse(JSON.parse(l)));
    const last = lines.at(-1);
    expect(last).toMatchObject({ type: 'batch', cursor: summary.cursor });
    const saved = readResumePoint(`${out}.cursor`);
    expect(positionOf(saved.cursor as string)).toBe(summary.cursor);
    expect(saved.offset).toBe(fs.statSync(out).size);
    const seqs = lines.flatMap((l) => ('op' in l ? [l.seq] : []));
    expect(new Set(seqs).size).toBe(seqs.length);
    expect(seqs.length).toBe(summary.events);

    // Resuming finds exactly the events the stopped run did not write: together, all 60 once.
    const rest = await runCliAsync(['export', src, '--out', out, '--json']);
    expect(rest.status, rest.stderr).toBe(0);
    expect(parseJson(rest, S.exportOutput).events).toBe(60 - summary.events);
    const all = fs
      .readFileSync(out, 'utf8')
      .trimEnd()
      .split('\n')
      .flatMap((l) => {
        const x = exportLineSchema.parse(JSON.parse(l));
        return 'op' in x ? [x.seq] : [];
      });
    expect(all).toEqual(Array.from({ length: 60 }, (_, i) => i + 1));
    expect(sourceSeq(src)).toBe(60);
  });
});
