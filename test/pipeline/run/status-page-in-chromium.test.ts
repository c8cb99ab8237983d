// the status page of sluice run shows in chromium a projection another programs ddl broke within seconds
import path from 'node:path';
import { afterEach } from 'vitest';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { Chromium } from '../../support/chromium.ts';
import { type Spawned } from '../../cli/support/cli.ts';
import { appSource, freePort, healthz, kill, put, py, startRun, waitHealth } from '../support/run.ts';

/*
 * The status page as `sluice run` serves it, in a real headless Chromium
 * (issue 21, "Must hold"): a pipeline with a table whose name is markup,
 * then DDL by another program (the sqlite3 CLI) that breaks one projection.
 * The page must show that projection suspended with its reason within
 * seconds, every name as text, and log no console error; the page comes
 * with its Content-Security-Policy.
 */

const EVIL = '<img src=x onerror=alert(1)>';

let running: Spawned | undefined;
afterEach(() => kill(running));

describe.skipIf(process.platform === 'win32')('sluice run', () => {
  test('its status page shows in Chromium, within seconds, the projection that DDL by another program broke, with names as text and no console error', async ({
    tmp,
  }) => {
    const src = path.join(tmp, 'app.db');
    const config = path.join(tmp, 'sluice.yml');
    appSource(src);
    py(
      src,
      `con.execute('CREATE TABLE "${EVIL}" (id INTEGER PRIMARY KEY, body TEXT)')\ncon.execute('INSERT INTO "${EVIL}" VALUES (1, \\'<b>x</b>\\')')`,
    );
    const port = await freePort();
    put(
      config,
      `sources:
  - path: app.db
    capture: [issues, comments, ${JSON.stringify(EVIL)}]
    targets:
      - path: cache.db
        projections: ["*", {name: open_issues, source: issues, kind: map, columns: {id: id, title: title}, filter: "state = 'open'"}]
listen: 127.0.0.1:${port}
`,
    );
    running = startRun(config);
    await waitHealth(port, 'the first build', (h) => h.code === 200);
    const page = await fetch(`http://127.0.0.1:${port}/`);
    expect(page.headers.get('content-security-policy')).toMatch(/default-src 'none'/);

    const browser = await Chromium.launch();
    try {
      const tab = await browser.open(`http://127.0.0.1:${port}/`);
      const names = `[...document.querySelectorAll('td.name')].map((e) => e.textContent)`;
      await tab.waitFor(`${names}.includes('open_issues')`, 30_000);
      expect(await tab.evaluate<string[]>(names)).toContain(EVIL);
      expect(await tab.evaluate('document.querySelectorAll("img, b").length')).toBe(0);
      const states = `Object.fromEntries([...document.querySelectorAll('tr')].filter((r) => r.cells.length === 7).map((r) => [r.cells[0].textContent, [r.cells[2].querySelector('.badge')?.textContent, r.cells[2].querySelector('code')?.textContent ?? null].join(' ').trim()]))`;
      expect(await tab.evaluate(states)).toMatchObject({ open_issues: 'active', issues: 'active', comments: 'active' });

      // Another program renames the column the map reads, and writes on.
      runSqliteCli(src, `ALTER TABLE issues RENAME COLUMN title TO headline; UPDATE issues SET headline = 'renamed' WHERE id = 1;`);
      await tab.waitFor(`(${states}).open_issues === 'suspended SOURCE_COLUMN_MISSING'`, 15_000);
      // Its repair, as /healthz (health) words it, is on the page.
      const action = (await healthz(port)).status.targets[0]?.projections.find((p) => p.name === 'open_issues')?.action;
      expect(action).toContain('sluice drop');
      expect(await tab.evaluate<string>('document.body.innerText')).toContain(action);
      expect(await tab.evaluate('document.title')).toMatch(/^sluice · \d+ problems?$/);

      expect(tab.events.dialogs).toEqual([]);
      expect(tab.events.errors).toEqual([]);
      // Chromium logs each 4xx/5xx response as a network error: only /healthz's 503 (not ok) may be among them.
      expect(
        tab.events.network.filter((e) => !/status of 503 \(Service Unavailable\) http:\/\/127\.0\.0\.1:\d+\/healthz$/.test(e)),
      ).toEqual([]);
    } finally {
      await browser.close();
    }
  }, 90_000);
});
