// usage errors exit 2 with a message naming the flag or argument
import fs from 'node:fs';
import path from 'node:path';
import { beforeAll, afterAll } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { runCliAsync, mapLimit, makeDir, removeDir, trackerSource, sha256 } from './support/cli.ts';

/*
 * A usage error is caught before any file is touched: exit 2, a stderr
 * message that names the offending flag or argument, nothing on stdout, no
 * stack trace, and no file created or changed.
 */

let dir: string;
let src: string;
const at = (f: string) => path.join(dir, f);

beforeAll(() => {
  dir = makeDir();
  src = trackerSource(at('app.db'));
});
afterAll(() => removeDir(dir));

interface Case {
  readonly args: (src: string) => string[];
  /** Every one of these must appear in stderr. */
  readonly names: readonly (string | RegExp)[];
}

const CASES: Record<string, Case> = {
  'enable without a table': { args: (s) => ['enable', s], names: ["missing required argument 'table'"] },
  'enable without anything': { args: () => ['enable'], names: ["missing required argument 'db'"] },
  'sync without a target': { args: (s) => ['sync', s], names: ["missing required argument 'target'"] },
  'verify without a target': { args: (s) => ['verify', s], names: ["missing required argument 'target'"] },
  'import without a file': { args: () => ['import', 'x.db'], names: ["missing required argument 'file'"] },
  'query without SQL': { args: (s) => ['query', s], names: ["missing required argument 'sql'"] },
  'health without a target': { args: () => ['health'], names: ["missing required argument 'target'"] },
  'bump without --reason': { args: (s) => ['bump', s], names: ['--reason'] },
  'export without --out': { args: (s) => ['export', s], names: ['--out'] },
  'strip without --out': { args: (s) => ['strip', s], names: ['--out'] },
  'an unknown option': { args: (s) => ['status', s, '--verbose'], names: ["unknown option '--verbose'"] },
  'an unknown option of sync': { args: (s) => ['sync', s, 'out.db', '--folow'], names: ["unknown option '--folow'"] },
  'an unknown command': { args: () => ['mirror'], names: ["unknown command 'mirror'"] },
  'a bad --mode choice': { args: (s) => ['enable', s, 'issues', '--mode', 'rows'], names: ['--mode', "'rows'", 'images, keys, counter'] },
  'a non-numeric --retention': { args: (s) => ['enable', s, 'issues', '--retention', '1e6'], names: ['--retention', '1e6'] },
  'a non-numeric --limit': { args: (s) => ['changes', s, '--limit', 'ten'], names: ['--limit', 'ten'] },
  'a --limit of 0 (it printed one event)': { args: (s) => ['changes', s, '--limit', '0'], names: ['--limit', 'at least 1'] },
  'a negative --limit': { args: (s) => ['changes', s, '--limit', '-5'], names: ['--limit', '-5'] },
  'a non-numeric --batch for sync': { args: (s) => ['sync', s, 'out.db', '--batch', '1.5'], names: ['--batch', '1.5'] },
  'a non-numeric --batch for export': { args: (s) => ['export', s, '--out', 'out.jsonl', '--batch', 'many'], names: ['--batch', 'many'] },
  'a non-numeric --max-rows': { args: (s) => ['query', s, 'SELECT 1', '--max-rows', 'all'], names: ['--max-rows', 'all'] },
  'a bad --log format': { args: (s) => ['sync', s, 'out.db', '--log', 'xml'], names: ['--log', 'xml'] },
  'an empty --nats for publish': { args: (s) => ['publish', s, '--nats', ''], names: ['--nats', 'nats://HOST:4222'] },
  'a --nats of commas for subscribe': { args: () => ['subscribe', 'sub.db', '--nats', ' , ', '--source', 'x'], names: ['--nats', '" , "'] },
  'an empty --stream for publish': {
    args: (s) => ['publish', s, '--nats', 'nats://127.0.0.1:1', '--stream', ''],
    names: ['--stream', '""'],
  },
  'a --stream with a dot for subscribe': {
    args: () => ['subscribe', 'sub.db', '--nats', 'nats://127.0.0.1:1', '--source', 'x', '--stream', 'a.b'],
    names: ['--stream', '"a.b"', 'no . * > / \\ or white space'],
  },
  'a --summary-interval of 0 for sync': {
    args: (s) => ['sync', s, 'out.db', '--follow', '--summary-interval', '0'],
    names: ['--summary-interval', '"0"', '2147483647'],
  },
  'a --summary-interval past a timer for publish': {
    args: (s) => ['publish', s, '--nats', 'nats://127.0.0.1:1', '--follow', '--summary-interval', '99999999999999'],
    names: ['--summary-interval', '"99999999999999"'],
  },
  'an empty --dir for demo': { args: () => ['demo', '--dir', ''], names: ['--dir', '""'] },
  'a --stream with a space for health': { args: () => ['health', 'sub.db', '--stream', 'my stream'], names: ['--stream', '"my stream"'] },
};

describe('usage errors', () => {
  test('exit 2 and name the flag or argument, touching no file', async () => {
    const before = sha256(src);
    const entries = Object.entries(CASES);
    // The --json flag must not turn a usage error into anything else.
    const results = await mapLimit(entries, 4, async ([name, c]) => ({
      name,
      r: await runCliAsync([...c.args(src), '--json'], { cwd: dir }),
    }));
    for (const { name, r } of results) {
      const c = CASES[name] as Case;
      expect(r.status, `${name}: ${r.stderr}`).toBe(2);
      expect(r.stdout, name).toBe('');
      expect(r.stderr, name).toMatch(/^error: /);
      expect(r.stderr, name).not.toContain('    at ');
      for (const n of c.names) {
        if (typeof n === 'string') expect(r.stderr, name).toContain(n);
        else expect(r.stderr, name).toMatch(n);
      }
    }
    expect(sha256(src)).toBe(before);
    expect(
      fs
        .readdirSync(dir)
        .filter((f) => !f.startsWith('app.db'))
        .sort(),
    ).toEqual([]);
  });
});
