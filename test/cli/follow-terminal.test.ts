// sync follow on a terminal prints a start line summaries and a final summary
import { beforeAll, afterAll } from 'vitest';
import { test, expect, runPython } from '../support/fixtures.ts';
import { makeDir, removeDir, sourceSeq, waitFor, syncedTrackerWithBacklog } from './support/cli.ts';
import { onTerminal, plain } from './support/pty.ts';

/*
 * `sync --follow` in human mode, on a terminal: a start line, a one-line
 * summary every --summary-interval (source events applied, lag), and on Ctrl-C a
 * final summary naming the seq the next sync resumes from.
 */

let dir: string;
let src: string;
let tgt: string;

beforeAll(async () => {
  dir = makeDir();
  ({ src, tgt } = await syncedTrackerWithBacklog(dir, 0));
});
afterAll(() => removeDir(dir));

test.skipIf(process.platform === 'win32')(
  'prints a start line, summaries of events applied and lag at the interval, and a final summary on Ctrl-C',
  async () => {
    const run = onTerminal(['sync', src, tgt, '--follow', '--summary-interval', '200']);
    const text = () => plain(run.output());
    await waitFor('the start line', () => text().includes('following '), 15_000);
    expect(text()).toContain(`following ${src} into ${tgt}: comments; a summary every 200 ms, Ctrl-C to stop`);
    await waitFor(
      'a first summary',
      () => /following: \d+ source events in the last 0\.2s, \d+ since start \(comments \d+\); lag \d+ events/.test(text()),
      15_000,
    );

    runPython(
      `import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.execute("UPDATE comments SET body = body || ' followed' WHERE id <= 30")
con.commit()`,
      [src],
    );
    await waitFor('a summary counting the 30 events', () => /, 30 since start \(comments 30\); lag 0 events/.test(text()), 15_000);
    // The bar's rate is of the pass that applied them, not of the time since the follower started.
    expect(text()).toMatch(/\| 30 events \| [1-9]\d* ev\/s \| lag 0/);

    run.interrupt();
    expect(await run.exited, text()).toBe(0);
    expect(text()).toMatch(
      new RegExp(
        `stopped by SIGINT after \\d+\\.\\ds: 30 source events applied \\(comments 30\\); lag 0 events; committed comments at seq ${sourceSeq(src)}, where the next sync resumes`,
      ),
    );
  },
);
