// a one shot sync interrupted by ctrl c says what it committed and exits 130
import { beforeAll, afterAll } from 'vitest';
import { test, expect } from '../support/fixtures.ts';
import { jsonSchemas as S } from '../../src/cli/index.ts';
import { runCliAsync, parseJson, makeDir, removeDir, sourceSeq, scalar, waitFor, syncedTrackerWithBacklog } from './support/cli.ts';
import { onTerminal, plain } from './support/pty.ts';

/*
 * Ctrl-C typed at a terminal during a long one-shot catch-up: the batch in
 * flight commits, sync says what it committed per projection and that the
 * next sync resumes there, and exits 130; the next sync does resume there.
 */

let dir: string;
let src: string;
let tgt: string;

beforeAll(async () => {
  dir = makeDir();
  ({ src, tgt } = await syncedTrackerWithBacklog(dir, 60));
});
afterAll(() => removeDir(dir));

const storedSeq = () => Number(scalar(tgt, "SELECT seq FROM main._sluice_projections WHERE name = 'comments'"));

test.skipIf(process.platform === 'win32')(
  'Ctrl-C mid catch-up commits the batch in flight, names the seq reached, exits 130, and the next sync resumes from it',
  async () => {
    const start = storedSeq();
    const run = onTerminal(['sync', src, tgt, '--batch', '1']);
    await waitFor('the catch-up to be under way', () => /\] ([1-9]|[1-4]\d)% catch-up/.test(plain(run.output())), 15_000);
    run.interrupt();
    expect(await run.exited, run.output()).toBe(130);
    const text = plain(run.output());
    const said = /interrupted by SIGINT: .*committed comments at seq (\d+) \(source at seq (\d+)\); the next sync resumes there/.exec(text);
    expect(said, text).not.toBeNull();
    const seq = Number(said?.[1]);
    expect(Number(said?.[2])).toBe(sourceSeq(src));
    expect(seq).toBeGreaterThan(start);
    expect(seq).toBeLessThan(sourceSeq(src));
    expect(text).toContain(`comments: applied ${seq - start} events, at seq ${seq} (stopped before catching up)`);
    expect(storedSeq()).toBe(seq);

    const rest = await runCliAsync(['sync', src, tgt, '--json']);
    expect(rest.status, rest.stderr).toBe(0);
    const done = parseJson(rest, S.syncOutput).projections[0];
    expect([done?.snapshotRows, done?.applied, done?.seq]).toEqual([undefined, sourceSeq(src) - seq, sourceSeq(src)]);
  },
);
