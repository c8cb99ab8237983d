// import from a pipe is refused, naming it and the fix, before anything is written
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { openDatabase } from '../../src/sqlite/index.ts';
import { BIN, runCliAsync, makeDir, removeDir, write, scalar, expectOneLineError } from '../cli/support/cli.ts';

/*
 * Import reads its file more than once and at positions (its header, its
 * first marker, its lines, its last byte), so `cat e.jsonl | sluice import
 * tgt.db /dev/stdin` failed with a bare `ESPIPE: invalid seek`. A pipe (or
 * a named one, a socket, a device) is now refused up front with
 * IMPORT_NOT_A_FILE, naming it and the fix, exit 1, and no target is made;
 * /dev/stdin redirected from a regular file still imports.
 */

let dir: string;
let jsonl: string;
const at = (f: string) => path.join(dir, f);

beforeAll(async () => {
  dir = makeDir();
  const src = at('src.db');
  openDatabase(src, { create: true }).close();
  write(src, "CREATE TABLE t (id INTEGER PRIMARY KEY, v); INSERT INTO t VALUES (1, 'a'), (2, 'b');");
  const en = await runCliAsync(['enable', src, 't']);
  expect(en.status, en.stderr).toBe(0);
  jsonl = at('e.jsonl');
  const r = await runCliAsync(['export', src, '--out', jsonl]);
  expect(r.status, r.stderr).toBe(0);
});
afterAll(() => removeDir(dir));

function expectRefused(r: { status: number | null; stdout: string; stderr: string }, input: string, what: string, tgt: string): void {
  expect(r.status, r.stderr).toBe(1);
  expectOneLineError(r, 'IMPORT_NOT_A_FILE');
  expect(r.stderr).toContain(`${input} is ${what}; import reads a regular file`);
  expect(r.stderr).toContain('Write it to a file first');
  expect(r.stderr).not.toContain('ESPIPE');
  expect(fs.existsSync(tgt)).toBe(false);
}

describe('import of a file that is not a regular file', () => {
  test('/dev/stdin fed by a shell pipe (cat e.jsonl | sluice import tgt.db /dev/stdin): refused, no target made', () => {
    const tgt = at('piped.db');
    const r = spawnSync('bash', ['-c', 'cat "$1" | "$2" "$3" import "$4" /dev/stdin', 'bash', jsonl, process.execPath, BIN, tgt], {
      encoding: 'utf8',
      timeout: 30_000,
    });
    expectRefused(r, '/dev/stdin', 'a pipe', tgt);
  });

  test('/dev/stdin fed by a socket (a parent process writing to it): refused, no target made', async () => {
    const tgt = at('socket.db');
    const r = await runCliAsync(['import', tgt, '/dev/stdin'], { input: fs.readFileSync(jsonl, 'utf8') });
    expectRefused(r, '/dev/stdin', 'a socket', tgt);
  });

  test('a named pipe: refused without opening it (no writer is waited for), no target made', () => {
    const fifo = at('e.fifo');
    const mk = spawnSync('mkfifo', [fifo]);
    expect(mk.status, String(mk.stderr)).toBe(0);
    const tgt = at('fifo.db');
    const r = spawnSync(process.execPath, [BIN, 'import', tgt, fifo], { encoding: 'utf8', timeout: 30_000 });
    expectRefused(r, fifo, 'a pipe', tgt);
  });

  test('/dev/stdin redirected from a regular file still imports', () => {
    const tgt = at('redirected.db');
    const fd = fs.openSync(jsonl, 'r');
    try {
      const r = spawnSync(process.execPath, [BIN, 'import', tgt, '/dev/stdin'], {
        encoding: 'utf8',
        stdio: [fd, 'pipe', 'pipe'],
        timeout: 30_000,
      });
      expect(r.status, r.stderr).toBe(0);
    } finally {
      fs.closeSync(fd);
    }
    expect(scalar(tgt, 'SELECT group_concat(v) FROM (SELECT v FROM t ORDER BY id)')).toBe('a,b');
  });
});
