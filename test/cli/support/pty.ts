import { spawn } from 'node:child_process';
import { ROOT } from '../../support/fixtures.ts';
import { BIN } from './cli.ts';

/*
 * The CLI under a real terminal (util-linux `script` gives it a pty), for
 * what it shows only on one: progress bars and follow summaries. What the
 * terminal showed, stdout and stderr together, is `output()`; `interrupt()`
 * types Ctrl-C, so the line discipline sends SIGINT as a user's would.
 */

export interface OnTerminal {
  readonly output: () => string;
  readonly interrupt: () => void;
  readonly exited: Promise<number | null>;
}

const quote = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

export function onTerminal(args: readonly string[]): OnTerminal {
  const cmd = [process.execPath, BIN, ...args].map(quote).join(' ');
  // -e: script exits with the command's status; -f: flushes as it goes.
  const child = spawn('script', ['-qfec', `stty cols 200; exec ${cmd}`, '/dev/null'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('close', (status) => resolve(status)));
  return { output: () => out, interrupt: () => child.stdin.write('\x03'), exited };
}

/** The terminal's text without colour and cursor sequences, each redraw of a line on its own line. */
export function plain(s: string): string {
  /* eslint-disable no-control-regex */
  return s
    .replace(/\x1b\[1G|\x1b[78]/g, '\n')
    .replace(/\x1b\[[0-9;?]*[A-Za-z]/g, '')
    .replace(/\r\n/g, '\n')
    .replace(/\r/g, '\n');
  /* eslint-enable no-control-regex */
}
