// a reader that closes the pipe ends changes and export quietly
import path from 'node:path';
import { spawn, spawnSync } from 'node:child_process';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe, ROOT } from '../support/fixtures.ts';
import { BIN, makeDir, removeDir, trackerSource, write } from './support/cli.ts';

/*
 * `sluice changes app.db | head -1`: the reader closes the pipe after its
 * first line, and the next write gets EPIPE. That is the reader saying it
 * has what it wanted, not a fault: the command ends quietly (exit 0, no
 * stack trace, nothing on stderr). The output is several MB, far more than
 * a pipe buffers, so the command is still writing when the pipe closes.
 */

let dir: string;
let src: string;

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(path.join(dir, 'app.db'), ['comments'], { repositories: 10, issuesPerRepo: 100, commentsPerIssue: 5 });
  // 5,000 comments, each updated twice: 10,000 events with both images.
  write(src, "UPDATE comments SET body = body || ' (edited)'; UPDATE comments SET body = body || ' (again)';");
});
afterAll(() => removeDir(dir));

const COMMANDS: Record<string, string[]> = {
  changes: ['changes', 'SRC', '--limit', '100000'],
  'export --out -': ['export', 'SRC', '--out', '-'],
};

/** Runs the CLI with stdout to a pipe that this process closes once it has read the first line. */
function runAndCloseAfterFirstLine(
  args: readonly string[],
): Promise<{ status: number | null; signal: NodeJS.Signals | null; first: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let buffered = '';
    let first: string | undefined;
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      if (first !== undefined) return;
      buffered += d;
      const nl = buffered.indexOf('\n');
      if (nl >= 0) {
        first = buffered.slice(0, nl);
        child.stdout.destroy(); // closes the read end: the child's next write gets EPIPE
      }
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (status, signal) => resolve({ status, signal, first: first ?? '', stderr }));
  });
}

describe('a reader that closes the pipe', () => {
  for (const [name, args] of Object.entries(COMMANDS)) {
    test(`${name}: a Node pipe closed after the first line ends the command with exit 0 and nothing on stderr`, async () => {
      const r = await runAndCloseAfterFirstLine(args.map((a) => (a === 'SRC' ? src : a)));
      expect(JSON.parse(r.first)).toHaveProperty('sourceId');
      expect(r.stderr).toBe('');
      expect(r.signal).toBeNull();
      expect(r.status).toBe(0);
    });
  }

  // The shell form a user types; POSIX sh and head(1) are not on Windows (the Node-pipe form above runs everywhere).
  test.skipIf(process.platform === 'win32' || spawnSync('sh', ['-c', 'true']).status !== 0)(
    'sh -c "sluice changes db | head -1" prints one line and the command exits 0 with nothing on stderr',
    () => {
      const quote = (s: string) => `'${s.replaceAll("'", "'\\''")}'`;
      for (const args of Object.values(COMMANDS)) {
        const cmd = [process.execPath, BIN, ...args.map((a) => (a === 'SRC' ? src : a))].map(quote).join(' ');
        // The pipeline's status is head's: the command's own goes to stderr after it, as "rc=N".
        const r = spawnSync('sh', ['-c', `{ ${cmd}; echo "rc=$?" >&2; } | head -1`], { encoding: 'utf8' });
        expect(r.stdout.split('\n').filter((l) => l !== '')).toHaveLength(1);
        expect(r.stderr).toBe('rc=0\n');
      }
    },
  );
});

test('help to a reader that has gone (`sluice sync --help | head -1`) ends with exit 0 and nothing on stderr', async () => {
  for (const args of [['sync', '--help'], ['--help']]) {
    const r = await new Promise<{ status: number | null; stderr: string }>((resolve, reject) => {
      const child = spawn(process.execPath, [BIN, ...args], { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
      child.stdout.destroy(); // the reader is gone before the help is written: its write gets EPIPE
      let stderr = '';
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
      child.on('error', reject);
      child.on('close', (status) => resolve({ status, stderr }));
    });
    expect(r.stderr, args.join(' ')).toBe('');
    expect(r.status, args.join(' ')).toBe(0);
  }
});
