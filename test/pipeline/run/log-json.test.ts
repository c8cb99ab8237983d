// sluice run log json writes nothing but json lines even when it cannot start
import fs from 'node:fs';
import path from 'node:path';
import { test, expect, describe } from '../../support/fixtures.ts';
import { runCliAsync } from '../../cli/support/cli.ts';
import { appSource, put } from '../support/run.ts';

/*
 * docs/deploy.md promises a log collector that `sluice run --log json`
 * writes one JSON object per line on stderr and nothing else. The line
 * that matters most, why the process could not start (a definition file
 * that throws at import, whose message holds quotes and a backslash; a
 * handler module that does is its target's failure, the run starts), is
 * one of them too, with its code, and the exit code stays 1.
 */

describe.skipIf(process.platform === 'win32')('sluice run --log json', () => {
  test('says why it cannot start as one JSON line with its code, and writes no other kind of line', async ({ tmp }) => {
    appSource(path.join(tmp, 'app.db'));
    put(path.join(tmp, 'bad.mjs'), 'throw new Error(\'boom "quoted" \\\\ back\');\n');
    const config = path.join(tmp, 'sluice.yml');
    put(
      config,
      `sources:
  - path: app.db
    capture: [issues]
    targets:
      - path: cache.db
        projections: ["*", ./bad.mjs]
`,
    );
    const r = await runCliAsync(['run', '--config', config, '--log', 'json']);
    expect(r.status, r.stderr).toBe(1);
    const lines = r.stderr.split('\n').filter((l) => l !== '');
    expect(lines.length).toBeGreaterThan(0);
    const parsed = lines.map((l) => {
      try {
        return JSON.parse(l) as Record<string, unknown>;
      } catch {
        throw new Error(`not a JSON line on stderr: ${l}`);
      }
    });
    const failed = parsed.filter((l) => l.level === 'error');
    expect(failed).toEqual([expect.objectContaining({ part: 'run', event: 'failed', code: 'BAD_DEFINITION' })]);
    expect(String(failed[0]?.msg)).toContain('boom "quoted" \\ back');
    expect(typeof failed[0]?.t).toBe('string');
    expect(fs.existsSync(path.join(tmp, 'cache.db'))).toBe(false);
  });
});
