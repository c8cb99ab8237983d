// a follower does not keep trying a pass whose failure only a user's repair ends (a Rejected definition change)
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect } from '../../support/fixtures.ts';
import { scalar, startCli, syncByLibrary, trackerSource, waitFor, type Spawned } from '../../cli/support/cli.ts';

/*
 * failed-pass-retry.ts tries a failed pass again by itself while the source
 * is idle (250 ms, doubling to 10 s), for a failure that may pass (a
 * handler's service down, a busy target). A Rejected definition change
 * (ALTER_CUSTOM_NO_SHADOW: a custom handler with no tables of its own got a
 * new version) fails every pass the same way until the user runs the repair
 * it names (sluice reinit). Each retry is a pass that fails again: one more
 * error report on the follower's output, and one more target write
 * (recordFailureAlone bumps the row's failures count), forever, every 10 s,
 * on a source that commits nothing; and the passes keep the follower from
 * ever going quiet (QUIET_MS is 10 s, the retry's cap too).
 */

let follower: Spawned | undefined;
afterEach(() => {
  follower?.child.kill('SIGKILL');
  follower = undefined;
});

interface Pass {
  readonly projections: readonly { readonly name: string; readonly error?: { readonly code: string } }[];
}

test('a pass refused for a Rejected definition change is not tried again and again while the source is idle', async ({ tmp }) => {
  const src = trackerSource(path.join(tmp, 'app.db'), ['issues']);
  const tgt = path.join(tmp, 'cache.db');
  const handler = (version: string) =>
    fs.writeFileSync(path.join(tmp, 'counts.mjs'), `export default { version: '${version}', apply() {} };\n`);
  handler('1');
  const def = path.join(tmp, 'counts.json');
  fs.writeFileSync(def, JSON.stringify({ name: 'counts', source: 'issues', kind: 'custom', module: './counts.mjs' }));
  expect(await syncByLibrary(src, tgt, [def])).toBe(0);
  handler('2'); // Rejected (ALTER_CUSTOM_NO_SHADOW) until `sluice reinit`
  const failures = () => Number(scalar(tgt, 'SELECT failures FROM _sluice_projections WHERE name = ?', 'counts'));

  const f = startCli(['sync', src, tgt, '--follow', '--json', '--projection', def]);
  follower = f;
  const refused = (): Pass[] =>
    f
      .stdout()
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as Pass)
      .filter((p) => p.projections.some((x) => x.error?.code === 'ALTER_CUSTOM_NO_SHADOW'));
  await waitFor('the first pass refused the change', () => refused().length >= 1);
  const before = failures();

  // Nothing is written to the source; the refusal cannot end by itself.
  await new Promise((r) => setTimeout(r, 4000));
  const again = refused().length - 1;
  const recorded = failures() - before;
  expect({ again, recorded }).toEqual({ again: 0, recorded: 0 });
}, 60_000);
