/*
 * A reader that closes the pipe (`sluice changes app.db | head -1`) has what
 * it wanted: the next write gets EPIPE, and that is no fault of the command.
 * It ends quietly, exit 0: no stack trace, no error line. Nothing is lost by
 * it: `changes` writes nothing, `export --out -` keeps no cursor file, and a
 * follow loop stops as on SIGTERM (its target transaction in flight commits,
 * or rolls back, and the next run continues from the target's cursor).
 *
 * The streams are guarded when a command first writes to them, not at start:
 * creating process.stdout makes a pipe's fd 1 non-blocking, and `export --out -`
 * writes fd 1 itself with fs.writeSync, which would then fail with EAGAIN
 * whenever the reader is slower than the export.
 */
import { errorCode } from '../index.ts';

let stdoutGuarded = false;
let stderrGuarded = false;
let closed = false;

/** True for the error a write to a pipe whose reader has gone gets. */
export function isClosedPipe(err: unknown): boolean {
  return errorCode(err) === 'EPIPE';
}

function guard(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: unknown) => {
    if (!isClosedPipe(err) && !closed) throw err;
    if (closed) return; // later writes to the closed stream fail too: already handled
    closed = true;
    // A follow loop stops as on SIGTERM; a one-shot command simply finishes (its output goes nowhere).
    if (process.listenerCount('SIGTERM') > 0) process.emit('SIGTERM', 'SIGTERM');
  });
}

/** process.stdout, guarded against a closed pipe. */
export function stdout(): NodeJS.WriteStream {
  if (!stdoutGuarded) {
    stdoutGuarded = true;
    guard(process.stdout);
  }
  return process.stdout;
}

/** process.stderr, guarded against a closed pipe (`sluice sync --follow 2>&1 | head`). */
export function stderr(): NodeJS.WriteStream {
  if (!stderrGuarded) {
    stderrGuarded = true;
    guard(process.stderr);
  }
  return process.stderr;
}
