// every command in the readme tour runs in order on the tracker
import fs from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { afterAll, beforeAll } from 'vitest';
import { test, expect, ROOT } from '../support/fixtures.ts';
import { BIN, makeDir, removeDir, runCliAsync, trackerSource } from './support/cli.ts';

/*
 * The README's five-minute tour, command by command, in a folder holding the
 * tracker as app.db and the example projections: each command exits 0 (the
 * follower stops on SIGINT after it started). The commands are read from the
 * README itself, so the tour and this test cannot drift apart.
 */

/** The `npx sluice ...` lines of the README's tour, as argument lists (comments stripped, "..." kept whole). */
function tourCommands(): string[][] {
  const readme = fs.readFileSync(path.join(ROOT, 'README.md'), 'utf8');
  const start = readme.indexOf('## A five-minute tour');
  const block = readme.slice(readme.indexOf('```sh', start) + 5, readme.indexOf('```', readme.indexOf('```sh', start) + 5));
  return block
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('npx sluice '))
    .map((l) => {
      const args: string[] = [];
      const re = /"([^"]*)"|(#.*$)|(\S+)/g;
      for (let m = re.exec(l); m !== null; m = re.exec(l)) {
        if (m[2] !== undefined) break; // a comment
        args.push(m[1] ?? (m[3] as string));
      }
      return args.slice(2); // drop "npx sluice"
    });
}

let dir: string;
beforeAll(() => {
  dir = makeDir();
  trackerSource(path.join(dir, 'app.db'), []);
  fs.cpSync(path.join(ROOT, 'projections'), path.join(dir, 'projections'), { recursive: true });
});
afterAll(() => removeDir(dir));

function followUntilStarted(args: readonly string[]): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    let out = '';
    const stop = setTimeout(() => child.kill('SIGINT'), 8000);
    const onData = (d: string) => {
      out += d;
      // Caught up: stop it the way the README says (Ctrl-C).
      if (/caught up|following|synced|applied|current/i.test(out)) {
        clearTimeout(stop);
        setTimeout(() => child.kill('SIGINT'), 300);
      }
    };
    child.stdout.setEncoding('utf8').on('data', onData);
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      stderr += d;
      onData(d);
    });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stderr }));
  });
}

test('every command of the README tour runs, in order, and exits 0 (the follower on Ctrl-C)', async () => {
  const commands = tourCommands();
  expect(commands.map((c) => c[0])).toEqual(['init', 'enable', 'status', 'sync', 'sync', 'sync', 'query', 'verify', 'health', 'reinit']);
  for (const args of commands) {
    if (args.includes('--follow')) {
      const r = await followUntilStarted(args);
      expect([0, 130], `${args.join(' ')}: ${r.stderr}`).toContain(r.status);
      continue;
    }
    const r = await runCliAsync(args, { cwd: dir });
    expect(r.status, `sluice ${args.join(' ')}: ${r.stderr}`).toBe(0);
  }
}, 120_000);
