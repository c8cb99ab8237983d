// sluice run's NOTHING_TO_SYNC for a "*" target says the pipeline file's fix (declare a table in images mode), not `sluice enable --mode images`
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../../support/fixtures.ts';
import { type Spawned } from '../../cli/support/cli.ts';
import { loadPipeline, planPipeline } from '../../../src/pipeline/index.ts';
import { appSource, freePort, kill, logLines, put, startRun, waitHealth } from '../support/run.ts';

/*
 * A target of "*" whose source's tables sluice.yml declares in keys mode
 * has nothing to mirror, and sync refuses it (NOTHING_TO_SYNC). sync's own
 * message says to run `sluice enable ... --mode images`, which run's
 * capture part would switch back to the declared keys mode at once. run's
 * log and /healthz now say what plan and health --config say: the fix in
 * the file's terms, from the one rule (nothingToMirrorFix).
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('a "*" target over tables declared in keys mode is refused with the file\'s fix, as plan says it, in /healthz and the log', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const tgt = path.join(tmp, 'cache.db');
    appSource(src);
    const config = path.join(tmp, 'sluice.yml');
    const port = await freePort();
    put(
      config,
      `sources:\n  - path: app.db\n    capture: {issues: keys}\n    targets:\n      - path: cache.db\n        projections: ["*"]\nlisten: 127.0.0.1:${port}\n`,
    );
    const plan = await planPipeline(await loadPipeline(config, {}));
    expect(plan.targets[0]?.refused?.code).toBe('NOTHING_TO_SYNC');
    const fix = plan.targets[0]?.refused?.fix ?? '';
    expect(fix).toContain('Declare a table in images mode in "capture"');

    running = startRun(config);
    const h = await waitHealth(port, 'the target refused', (x) =>
      x.status.run.parts.some((p) => p.name === tgt && p.failure?.code === 'NOTHING_TO_SYNC'),
    );
    const failure = h.status.run.parts.find((p) => p.name === tgt)?.failure;
    expect(failure?.message).toContain(fix);
    expect(failure?.message).not.toContain('--mode images');
    expect(h.status.problems.join('\n')).not.toContain('--mode images');
    const logged = logLines(running).filter((l) => l.msg.includes('NOTHING_TO_SYNC') || l.code === 'NOTHING_TO_SYNC');
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.map((l) => l.msg).join('\n')).not.toContain('--mode images');
  });
});
