// an import that reaches past another folder's index.ts fails the lint
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, test, expect } from 'vitest';

/* npm test runs eslint with eslint.config.js; these lint one file at a path (never written). docs/architecture.md, "Faces". */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const eslint = new ESLint({ cwd: root });

async function lint(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  return (result?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
}

describe('faces (docs/architecture.md, "Faces")', () => {
  test("an import past another folder's index.ts fails from src/ and test/, as an import, a type-only import, a re-export, an import() and an import() type, naming the face", async () => {
    const cases: Array<[string, string, string]> = [
      [
        'src/apply/sync/deep.ts',
        "import { readProjections } from '../target/target-meta.ts';\nexport const f = readProjections;\n",
        '../target/index.ts',
      ],
      ['src/apply/check/deep.ts', "import type { Db } from '../../sqlite/connection.ts';\nexport type D = Db;\n", '../../sqlite/index.ts'],
      ['src/export/deep.ts', "export { readBatch } from '../feed/batch.ts';\n", '../feed/index.ts'],
      ['src/pipeline/run/deep.ts', "export const load = () => import('../load.ts');\n", '../index.ts'],
      ['src/pipeline/deep.ts', "export type W = import('./follow/wait.ts').Wait;\n", './follow/index.ts'],
      [
        'test/apply/sync/deep.test.ts',
        "import { sync } from '../../../src/apply/sync/sync.ts';\nexport const s = sync;\n",
        '../../../src/apply/sync/index.ts',
      ],
      [
        'test/support/deep.ts',
        "import { enable } from '../../src/capture/enable.ts';\nexport const e = enable;\n",
        '../../src/capture/index.ts',
      ],
    ];
    for (const [file, code, face] of cases)
      expect(await lint(file, code), file).toEqual([
        expect.stringMatching(new RegExp(`^sluice/faces: .*reaches past the face .*import it from '${face.replace(/\./g, '\\.')}'`)),
      ]);
  });

  test("a file's own folder, another folder's index.ts, errors.ts and reasons.ts pass, and bench/ and scripts/ may import any file", async () => {
    const code = [
      "import { readProjections } from '../target/index.ts';",
      "import { stepOutcome } from './step.ts';",
      "import { openDatabase } from '../../sqlite/index.ts';",
      "import { SluiceError } from '../../errors.ts';",
      "import { REASONS } from '../../reasons.ts';",
      'export const all = [readProjections, stepOutcome, openDatabase, SluiceError, REASONS];',
    ].join('\n');
    expect(await lint('src/apply/sync/faced.ts', code + '\n')).toEqual([]);
    expect(
      await lint('test/apply/faced.test.ts', "import { sync } from '../../src/apply/sync/index.ts';\nexport const s = sync;\n"),
    ).toEqual([]);
    for (const file of ['bench/deep.ts', 'scripts/deep.ts'])
      expect(await lint(file, "import { sync } from '../src/apply/sync/sync.ts';\nexport const s = sync;\n"), file).toEqual([]);
  });

  test("projection/'s sub-folders are parts of it: inside it files import each other directly, from outside only through projection/index.ts", async () => {
    expect(
      await lint(
        'src/projection/kinds/map/inside.ts',
        "import { kindOf } from '../registry.ts';\nimport type { CompiledProjection } from '../../compiled.ts';\nexport const k = kindOf;\nexport type C = CompiledProjection;\n",
      ),
    ).toEqual([]);
    expect(
      await lint(
        'test/projection/kinds/map/outside.test.ts',
        "import { kindOf } from '../../../../src/projection/kinds/registry.ts';\nexport const k = kindOf;\n",
      ),
    ).toEqual([expect.stringContaining("import it from '../../../../src/projection/index.ts'")]);
    expect(
      await lint('src/apply/outside.ts', "import { kindOf } from '../projection/kinds/index.ts';\nexport const k = kindOf;\n"),
    ).toEqual([expect.stringContaining('reaches past the face of src/projection/')]);
  });
});
