import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { createInterface } from 'node:readline';
import { PYTHON } from './fixtures.ts';

/*
 * One long-lived Python stdlib sqlite3 writer (a writer that knows nothing of
 * sluice), driven line by line: a JSON command on stdin, one JSON answer on
 * stdout. It keeps Python's defaults (recursive_triggers off) and runs with
 * isolation_level=None, so BEGIN/COMMIT/ROLLBACK/SAVEPOINT are whatever the
 * caller sends. Starting one process per statement would be far too slow for
 * a property test.
 */

const SCRIPT = `
import json, sqlite3, sys
conn = None
for line in sys.stdin:
    cmd = json.loads(line)
    try:
        if 'open' in cmd:
            if conn is not None:
                conn.close()
            conn = sqlite3.connect(cmd['open'], timeout=10, isolation_level=None)
            out = {'ok': True, 'recursive_triggers': conn.execute('PRAGMA recursive_triggers').fetchone()[0], 'sqlite': sqlite3.sqlite_version}
        elif 'close' in cmd:
            if conn is not None:
                conn.close()
            conn = None
            out = {'ok': True}
        else:
            conn.execute(cmd['sql'])
            out = {'ok': True, 'in_transaction': conn.in_transaction}
    except sqlite3.Error as e:
        out = {'ok': False, 'error': str(e), 'name': getattr(e, 'sqlite_errorname', type(e).__name__)}
    sys.stdout.write(json.dumps(out) + '\\n')
    sys.stdout.flush()
`;

export interface PythonReply {
  readonly ok: boolean;
  readonly error?: string;
  /** SQLite's error name, e.g. SQLITE_CONSTRAINT_UNIQUE. */
  readonly name?: string;
  readonly recursive_triggers?: number;
  readonly in_transaction?: boolean;
}

export class PythonWriter {
  readonly #proc: ChildProcessWithoutNullStreams;
  readonly #waiting: { resolve: (r: PythonReply) => void; reject: (e: Error) => void }[] = [];
  #stderr = '';
  #exited: Error | undefined;

  private constructor() {
    this.#proc = spawn(PYTHON, ['-u', '-c', SCRIPT], { stdio: ['pipe', 'pipe', 'pipe'] });
    this.#proc.stderr.setEncoding('utf8').on('data', (d: string) => (this.#stderr += d));
    createInterface({ input: this.#proc.stdout }).on('line', (line) => {
      const w = this.#waiting.shift();
      if (w === undefined) return;
      try {
        w.resolve(JSON.parse(line) as PythonReply);
      } catch {
        w.reject(new Error(`python writer printed a line that is not JSON: ${line}`));
      }
    });
    this.#proc.on('exit', (code, signal) => {
      this.#exited = new Error(`python writer exited (${String(code ?? signal)}): ${this.#stderr}`);
      for (const w of this.#waiting.splice(0)) w.reject(this.#exited);
    });
  }

  static start(): PythonWriter {
    return new PythonWriter();
  }

  send(cmd: { open: string } | { close: true } | { sql: string }): Promise<PythonReply> {
    if (this.#exited !== undefined) return Promise.reject(this.#exited);
    return new Promise((resolve, reject) => {
      this.#waiting.push({ resolve, reject });
      this.#proc.stdin.write(`${JSON.stringify(cmd)}\n`);
    });
  }

  /** Closes stdin and waits for the process to end. */
  async stop(): Promise<void> {
    if (this.#exited !== undefined) return;
    const done = new Promise<void>((resolve) => this.#proc.once('exit', () => resolve()));
    this.#proc.stdin.end();
    await done;
  }
}
