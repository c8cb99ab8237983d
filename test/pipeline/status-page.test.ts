// the status page shows every projection from healthz in a real chromium with names as text and a suspension within seconds
import fs from 'node:fs';
import path from 'node:path';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { test, expect, runSqliteCli } from '../support/fixtures.ts';
import { Chromium } from '../support/chromium.ts';
import { runStatusOf } from '../support/run-status.ts';
import { enable } from '../../src/capture/index.ts';
import { defaultProjectionName } from '../../src/projection/index.ts';
import { sync } from '../../src/apply/sync/index.ts';
import { loadPipeline, statusPageHtml, STATUS_PAGE_CSP } from '../../src/pipeline/index.ts';
import { runStatusOutput } from '../../src/cli/index.ts';
import type { RunStatus } from '../../src/pipeline/index.ts';

/*
 * The status page as a browser shows it: Chromium loads it from a server
 * that sends it with its Content-Security-Policy and answers /healthz with a
 * RunStatus read from real files at each request (a real source and target,
 * health() of the target), 200 or 503 as `sluice run` does. Names that are
 * markup (a table, a folder) must show as text; a projection suspended by a
 * real external DDL and a sync must show within seconds; the page must log
 * no console error (a CSP violation is one).
 */

const EVIL = '<img src=x onerror=alert(1)>';

test('the status page renders every source, target and projection from /healthz in Chromium, names as text, a suspension within seconds, and no console error', async ({
  makeDb,
  tmp,
}) => {
  // The folder's name is markup too: every path on the page is data.
  const folder = '<svg onload=alert(2)>';
  const dir = path.join(tmp, folder);
  fs.mkdirSync(dir);
  const { db, file: source } = makeDb(
    path.join(folder, 'app.db'),
    `CREATE TABLE issues (id INTEGER PRIMARY KEY, title TEXT, state TEXT);
     CREATE TABLE "${EVIL}" (id INTEGER PRIMARY KEY, body TEXT);
     INSERT INTO issues VALUES (1, 'crash on start', 'open'), (2, 'typo', 'closed');
     INSERT INTO "${EVIL}" VALUES (1, '<b>bold</b>');`,
  );
  enable(db, ['issues', EVIL]);
  const target = path.join(dir, 'cache.db');
  await sync(source, target, {
    projections: [
      '*',
      { name: 'open_issues', source: 'issues', kind: 'map', columns: { id: 'id', title: 'title' }, filter: "state = 'open'" },
      { name: 'issues_search', source: 'issues', kind: 'fts5', columns: ['title'] },
    ],
  });
  // A real configError: the message of a pipeline file that does not load.
  const config = path.join(dir, 'sluice.yml');
  fs.writeFileSync(config, `sources:\n  - path: app.db\n    capture: [issues]\n    "${EVIL}": 1\n`);
  const configError = await loadPipeline(config).then(
    () => null,
    (e: Error & { code: string }) => ({ code: e.code, message: e.message, ms: Date.now() }),
  );
  expect(configError?.message).toContain(EVIL);

  const served: RunStatus[] = [];
  let down = false; // a proxy in front whose upstream is gone: 502 and no JSON
  const server = http.createServer((req, res) => {
    if (req.url === '/healthz' && down) {
      res.writeHead(502, { 'content-type': 'text/html' }).end('<h1>502 Bad Gateway</h1>');
    } else if (req.url === '/') {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': STATUS_PAGE_CSP });
      res.end(statusPageHtml());
    } else if (req.url === '/healthz') {
      const s = runStatusOutput.parse(
        runStatusOf({
          config,
          sources: [source],
          targets: [{ path: target, source }],
          configError,
          parts: [
            { kind: 'capture', name: source, state: 'running', failure: null },
            { kind: 'target', name: target, state: 'running', failure: null },
            {
              kind: 'publish',
              name: source,
              state: 'retrying',
              failure: {
                code: 'BROKER_UNREACHABLE',
                message: `nats://${EVIL}:4222 refused`,
                ms: Date.now() - 3000,
                attempts: 2,
                retryMs: Date.now() + 4000,
              },
            },
          ],
        }),
      ) as RunStatus;
      served.push(s);
      res.writeHead(s.ok ? 200 : 503, { 'content-type': 'application/json' });
      res.end(JSON.stringify(s));
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const browser = await Chromium.launch();
  try {
    const page = await browser.open(`http://127.0.0.1:${port}/`);
    const names = `[...document.querySelectorAll('td.name')].map((e) => e.textContent)`;
    await page.waitFor(`${names}.includes('open_issues')`, 30_000);
    const shown = await page.evaluate<string[]>(names);
    // Every projection health reports, by the name it reports, and the captured tables by theirs: the markup one as its text.
    const projections = (served.at(-1) as RunStatus).targets[0]?.projections.map((p) => p.name) ?? [];
    expect(projections).toHaveLength(4);
    for (const n of [...projections, 'issues', EVIL]) expect(shown, n).toContain(n);
    const text = await page.evaluate<string>('document.body.innerText');
    for (const s of [source, target, config, configError?.message ?? '', 'BROKER_UNREACHABLE', `nats://${EVIL}:4222 refused`])
      expect(text, s).toContain(s);
    // Nothing in the data became an element: no img, no svg, no script but the page's own.
    expect(await page.evaluate('document.querySelectorAll("img, svg, b").length')).toBe(0);
    expect(await page.evaluate('document.scripts.length')).toBe(1);
    // The captured table's row: its name cell holds the name as it is, character for character.
    expect(shown.filter((t) => t === EVIL)).toEqual([EVIL]);
    // Each projection row (7 cells): its name, and its state badge with the reason code beside it.
    const states = `Object.fromEntries([...document.querySelectorAll('tr')].filter((r) => r.cells.length === 7).map((r) => [r.cells[0].textContent, [r.cells[2].querySelector('.badge')?.textContent, r.cells[2].querySelector('code')?.textContent ?? null].join(' ').trim()]))`;
    expect(await page.evaluate(states)).toMatchObject({ open_issues: 'active', issues_search: 'active', issues: 'active' });

    // Writes not synced yet: the mirror's lag, in events and in time, as health reads it from the source.
    const lag = `[...document.querySelectorAll('tr')].filter((r) => r.cells.length === 7 && r.cells[0].textContent === ${JSON.stringify(defaultProjectionName(EVIL))}).map((r) => [r.cells[3].textContent, r.cells[4].textContent])[0]`;
    runSqliteCli(source, `INSERT INTO "${EVIL}" VALUES (2, 'b'), (3, 'c'), (4, 'd');`);
    await page.waitFor(`${lag}?.[0] === '3'`, 10_000);
    expect((await page.evaluate<string[]>(lag))[1]).toMatch(/^\d+(\.\d)? (ms|s)$/);

    // Another program's DDL breaks the map and the fts5 index; the next sync suspends them; the page shows it within seconds.
    runSqliteCli(source, 'ALTER TABLE issues RENAME COLUMN title TO headline;');
    const s = await sync(source, target);
    expect(
      s.projections
        .filter((p) => p.state === 'suspended')
        .map((p) => p.name)
        .sort(),
    ).toEqual(['issues_search', 'open_issues']);
    const before = served.length;
    await page.waitFor(`(${states}).open_issues === 'suspended SOURCE_COLUMN_MISSING'`, 10_000);
    expect(served.length, 'the page polls /healthz').toBeGreaterThan(before);
    expect(served.at(-1)?.ok).toBe(false);
    expect(await page.evaluate(states)).toMatchObject({
      issues_search: 'suspended SOURCE_COLUMN_MISSING',
      issues: 'active',
    });
    // The repair command is on the page as health gives it.
    const action = served.at(-1)?.targets[0]?.projections.find((p) => p.name === 'open_issues')?.action ?? '<none>';
    expect(action).toContain('sluice drop');
    expect(await page.evaluate<string>('document.body.innerText')).toContain(action);
    expect(await page.evaluate('document.title')).toMatch(/^sluice · \d+ problems?$/);

    if (process.env['SLUICE_SCREENSHOT'] !== undefined) fs.writeFileSync(process.env['SLUICE_SCREENSHOT'], await page.screenshot());
    expect(page.events.dialogs).toEqual([]);
    expect(page.events.errors).toEqual([]);
    // Chromium logs every response of 400 or more as a network error, the 503 /healthz answers while not ok included
    // (that 503 is the endpoint's contract); nothing else failed to load (no favicon, nothing blocked).
    expect(page.events.network.length).toBeGreaterThan(0);
    expect(page.events.network.filter((e) => !/status of 503 \(Service Unavailable\) http:\/\/127\.0\.0\.1:\d+\/healthz$/.test(e))).toEqual(
      [],
    );
    // healthz unreachable (a proxy answers 502 without JSON): the page says so and keeps what it showed last.
    down = true;
    await page.waitFor(
      `document.getElementById('conn').textContent.includes('Cannot read healthz: healthz answered 502 without JSON')`,
      10_000,
    );
    expect(await page.evaluate(names)).toEqual(shown);
    expect(page.events.errors).toEqual([]);

    // The policy is enforced and a violation is seen: a script the page did not ship is refused, with an error.
    await page.evaluate(`document.body.append(Object.assign(document.createElement('script'), { textContent: 'window.ran = 1' }))`);
    expect(await page.evaluate('window.ran === undefined')).toBe(true);
    await expect.poll(() => page.events.errors.join('\n')).toMatch(/Content Security Policy/);
  } finally {
    await browser.close();
    await new Promise((resolve) => server.close(resolve));
  }
}, 90_000);
