// the layer order is written once in docs architecture md and the lint reads the same list
import fs from 'node:fs';
import path from 'node:path';
import { test, expect } from 'vitest';
// @ts-expect-error -- eslint.config.js is plain JavaScript, with no types to read
import { LAYERS as LINT_LAYERS } from '../../eslint.config.js';

const LAYERS = LINT_LAYERS as readonly string[];

const root = path.resolve(import.meta.dirname, '..', '..');

/** The order line of docs/architecture.md ("`sqlite` < `capture` < ..."), as a list. */
function statedOrder(): string[] {
  const doc = fs.readFileSync(path.join(root, 'docs', 'architecture.md'), 'utf8');
  const lines = doc.split('\n').filter((l) => /^`[a-z]+`( < `[a-z]+`)+$/.test(l.trim()));
  expect(lines, 'docs/architecture.md states the layer order once, on a line of its own').toHaveLength(1);
  return (lines[0] as string).split('<').map((s) => s.trim().replace(/`/g, ''));
}

test("docs/architecture.md's layer order is the lint's LAYERS, and each layer is a folder of src/", () => {
  expect(statedOrder()).toEqual(LAYERS);
  const folders = fs
    .readdirSync(path.join(root, 'src'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name)
    .sort();
  expect(folders).toEqual([...LAYERS].sort());
});
