import fs from 'node:fs';
import path from 'node:path';
import { expect } from 'vitest';
import { ROOT } from './fixtures.ts';

/* Reading a `--metrics` endpoint the way Prometheus does, for the metrics tests. */

/** The metric names docs/metrics.md documents as served by `command`, with their types. */
export function documentedMetrics(command: string): Map<string, string> {
  const text = fs.readFileSync(path.join(ROOT, 'docs', 'metrics.md'), 'utf8');
  return new Map(
    [...text.matchAll(/^\| `(sluice_\w+)` \| (\w+) \| ([^|]+) \|/gm)]
      .filter((m) => (m[3] as string).includes(command))
      .map((m) => [m[1] as string, m[2] as string]),
  );
}

export interface Scrape {
  readonly types: Map<string, string>;
  readonly values: Map<string, number>;
}

/** One scrape of /metrics: each metric's declared type, and each sample's value by `name{labels}`. */
export async function scrape(port: number): Promise<Scrape> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  const types = new Map<string, string>();
  const values = new Map<string, number>();
  for (const line of (await res.text()).split('\n')) {
    const t = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (t !== null) types.set(t[1] as string, t[2] as string);
    const v = /^(\w+(?:\{[^}]*\})?) (\S+)$/.exec(line);
    if (v !== null) values.set(v[1] as string, Number(v[2]));
  }
  return { types, values };
}

/** Scrapes until `check` holds (or 30 s pass: the last scrape, for the assertions to report); a process still starting (nothing listening yet) is waited for. */
export async function scrapeUntil(port: number, check: (s: Scrape) => boolean): Promise<Scrape> {
  const deadline = Date.now() + 30_000;
  let s: Scrape | undefined;
  while (s === undefined) {
    s = await scrape(port).catch((err: unknown) => {
      if (Date.now() > deadline) throw err;
      return new Promise<undefined>((r) => setTimeout(() => r(undefined), 50));
    });
  }
  while (!check(s) && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 50));
    s = await scrape(port);
  }
  return s;
}

/** One sample's value. */
export const sample = (s: Scrape, name: string, labels: string): number | undefined => s.values.get(`${name}{${labels}}`);
