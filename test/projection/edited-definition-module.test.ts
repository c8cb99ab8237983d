// a definition module edited while it is followed is imported afresh
import fs from 'node:fs';
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe } from '../support/fixtures.ts';
import { runCli, scalar, startCli, type Spawned } from '../cli/support/cli.ts';
import { appSource, freePort, kill, logLines, put, startRun, waitForRun, waitHealth } from '../pipeline/support/run.ts';

/*
 * A definition written as a module (.ts, .js, .mjs) is imported, and Node
 * keeps what it imported under the file's URL for the life of the process:
 * `sluice run` logged "reload" for an edited picked.ts (and on SIGHUP) and
 * kept following with the old definition, forever, as did `sync --follow
 * --projection picked.ts`. A module whose content changed is imported
 * afresh; one that did not change is not imported again.
 */

let running: Spawned | undefined;
afterEach(() => kill(running));

/** A map of the issues in `state`; each import of the module adds a line to `imports`. */
const picked = (state: string, imports: string) => `import fs from 'node:fs';
fs.appendFileSync(${JSON.stringify(imports)}, 'imported\\n');
export default { name: 'picked', source: 'issues', kind: 'map', columns: { id: 'id', title: 'title' }, filter: "state = '${state}'" };
`;

/** The ids `picked` holds are those of the issues in `state` (appSource: odd ids open, even ones closed), and only those. */
const holds = (tgt: string, state: 'open' | 'closed') => () => {
  try {
    const rows = scalar(tgt, `SELECT count(*) FROM picked`);
    const wrong = scalar(tgt, `SELECT count(*) FROM picked WHERE id % 2 = ${state === 'open' ? 0 : 1}`);
    return rows === 25n && wrong === 0n;
  } catch {
    return false; // not built yet
  }
};

const imports = (file: string) => (fs.existsSync(file) ? fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).length : 0);

describe.skipIf(process.platform === 'win32')('a definition module edited while it is followed', () => {
  for (const name of ['picked.ts', 'picked.mjs'])
    test(`sluice run takes in the new definition of ${name}, and imports an unchanged one once`, async ({ tmp }) => {
      const src = path.join(tmp, 'app.db');
      const tgt = path.join(tmp, 'cache.db');
      const def = path.join(tmp, name);
      const log = path.join(tmp, 'imports.log');
      appSource(src);
      put(def, picked('open', log));
      const config = path.join(tmp, 'sluice.yml');
      const port = await freePort();
      put(
        config,
        `sources:\n  - path: app.db\n    capture: [issues]\n    targets: [{path: cache.db, projections: [${name}]}]\nlisten: 127.0.0.1:${port}\n`,
      );
      running = startRun(config);
      const r = running;
      await waitHealth(port, 'the first build', (h) => h.code === 200);
      expect(holds(tgt, 'open')()).toBe(true);

      put(def, picked('closed', log));
      await waitForRun(r, 'picked rebuilt from the edited definition', holds(tgt, 'closed'), 20_000);
      const reloads = () => logLines(r).filter((l) => l.event === 'reload').length;
      const before = { imports: imports(log), reloads: reloads() };
      r.child.kill('SIGHUP');
      await waitForRun(r, 'the reload on SIGHUP', () => reloads() > before.reloads);
      expect(imports(log)).toBe(before.imports);
      expect(holds(tgt, 'closed')()).toBe(true);
    }, 60_000);

  test('sync --follow --projection picked.ts takes in the new definition', async ({ tmp }) => {
    const src = path.join(tmp, 'app.db');
    const tgt = path.join(tmp, 'cache.db');
    const def = path.join(tmp, 'picked.ts');
    const log = path.join(tmp, 'imports.log');
    appSource(src);
    put(def, picked('open', log));
    expect(runCli(['enable', src, 'issues']).status).toBe(0);
    running = startCli(['sync', src, tgt, '--follow', '--json', '--projection', def]);
    const r = running;
    await waitForRun(r, 'the first build', holds(tgt, 'open'));
    put(def, picked('closed', log));
    await waitForRun(r, 'picked rebuilt from the edited definition', holds(tgt, 'closed'), 20_000);
  }, 60_000);
});
