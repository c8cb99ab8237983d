import fs from 'node:fs';
import path from 'node:path';
import semver from 'semver';
import { describe, expect, test } from 'vitest';

/*
 * docs/node-support.md: sluice supports the Node releases its `engines`
 * names, and an install on one of them must not warn. npm warns
 * (EBADENGINE) for every package of the installed tree whose own `engines`
 * excludes the running Node, so each package a user's install brings (the
 * lockfile's non-dev packages) must accept the oldest release of every
 * supported line.
 */

const root = path.resolve(import.meta.dirname, '../..');
const read = (f: string) => JSON.parse(fs.readFileSync(path.join(root, f), 'utf8')) as Record<string, unknown>;

interface LockEntry {
  readonly dev?: boolean;
  readonly engines?: { readonly node?: string } | readonly string[];
}

describe('dependency engines', () => {
  test("every package a user's install brings accepts the oldest release of each Node line sluice supports", () => {
    const range = (read('package.json').engines as { node: string }).node;
    const oldest = range.split('||').map((part) => semver.minVersion(part.trim())!.version);
    expect(oldest).toEqual(['20.19.0', '22.12.0', '24.0.0']);
    const packages = read('package-lock.json').packages as Record<string, LockEntry>;
    const shipped = Object.entries(packages).filter(([name, p]) => name !== '' && p.dev !== true);
    expect(shipped.length).toBeGreaterThan(10);
    const refusing = shipped.flatMap(([name, p]) => {
      const wants = Array.isArray(p.engines) ? undefined : (p.engines as { node?: string } | undefined)?.node;
      if (wants === undefined) return [];
      const refused = oldest.filter((v) => !semver.satisfies(v, wants));
      return refused.length === 0 ? [] : [`${name.replace(/^.*node_modules\//, '')} wants node ${wants}, refusing ${refused.join(', ')}`];
    });
    expect(refusing).toEqual([]);
  });
});
