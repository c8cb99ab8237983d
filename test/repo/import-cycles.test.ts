// no two files of src import each other even for a type
import fs from 'node:fs';
import path from 'node:path';
import { test, expect } from '../support/fixtures.ts';
import { importCycles } from '../../scripts/import-cycles.ts';
import { folderGraph } from '../../scripts/apply-faces.ts';

const SRC = path.resolve(import.meta.dirname, '../../src');

test('src/ has no import circle (type-only imports and import() count)', () => {
  expect(importCycles(SRC)).toEqual([]);
});

test("src/'s folders import each other without a circle, so that no face imports itself through another", () => {
  expect(folderGraph().cycles).toEqual([]);
});

test('the check finds a circle through a type-only import, a re-export and an import() across folders', ({ tmp }) => {
  fs.mkdirSync(path.join(tmp, 'a'));
  fs.mkdirSync(path.join(tmp, 'b'));
  fs.writeFileSync(path.join(tmp, 'a', 'one.ts'), "import type { Two } from '../b/two.ts';\nexport type One = Two;\n");
  fs.writeFileSync(path.join(tmp, 'b', 'two.ts'), "export { three } from './three.ts';\nexport type Two = number;\n");
  fs.writeFileSync(path.join(tmp, 'b', 'three.ts'), "export const three = () => import('../a/one.ts');\n");
  fs.writeFileSync(path.join(tmp, 'b', 'alone.ts'), "import { three } from './three.ts';\nexport const x = three;\n");
  expect(importCycles(tmp)).toEqual([['a/one.ts', 'b/three.ts', 'b/two.ts']]);
});

test('the check finds a circle through a side-effect import, an export * as and an import type of a default', ({ tmp }) => {
  fs.writeFileSync(path.join(tmp, 'one.ts'), "import './two.ts';\nexport const one = 1;\n");
  fs.writeFileSync(path.join(tmp, 'two.ts'), "export * as three from './three.ts';\n");
  fs.writeFileSync(path.join(tmp, 'three.ts'), "import type One from './one.ts';\nexport type T = One;\n");
  expect(importCycles(tmp)).toEqual([['one.ts', 'three.ts', 'two.ts']]);
});
