// an import that crosses a layer upward fails the lint
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ESLint } from 'eslint';
import { describe, test, expect } from 'vitest';

/* npm test runs eslint with eslint.config.js; these lint one file at a path under src/ (never written). */

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const eslint = new ESLint({ cwd: root });

async function lint(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: path.join(root, file) });
  return (result?.messages ?? []).map((m) => `${m.ruleId}: ${m.message}`);
}

describe('layer boundaries', () => {
  test('projection/ importing apply/ fails, naming both layers and the order', async () => {
    const errors = await lint(
      'src/projection/upward.ts',
      "import { readProjections } from '../apply/target/index.ts';\nexport const f = readProjections;\n",
    );
    expect(errors).toHaveLength(1);
    expect(errors[0]).toContain('projection/ may not import apply/');
    expect(errors[0]).toContain('sqlite < capture < feed < projection < apply < export < broker < pipeline < cli');
  });

  test('an upward import fails from a nested folder, as a type-only import, a re-export, an import() type and a dynamic import()', async () => {
    const cases: Array<[string, string]> = [
      ['src/projection/kinds/upward.ts', "import type { SyncReport } from '../../apply/sync/index.ts';\nexport type R = SyncReport;\n"],
      ['src/capture/upward.ts', "export { readBatch } from '../feed/index.ts';\n"],
      ['src/sqlite/upward.ts', "export type C = import('../capture/index.ts').CapturedTable;\n"],
      ['src/apply/upward.ts', "export const load = () => import('../export/index.ts');\n"],
      ['src/export/upward.ts', "export * from '../cli/index.ts';\n"],
      ['src/export/broker-upward.ts', "export { publish } from '../broker/index.ts';\n"],
      ['src/broker/upward.ts', "export * from '../cli/index.ts';\n"],
    ];
    for (const [file, code] of cases) expect(await lint(file, code), file).toEqual([expect.stringMatching(/may not import/)]);
  });

  test('a downward import, one inside the layer, errors.ts and reasons.ts pass', async () => {
    const code = [
      "import { openDatabase } from '../sqlite/index.ts';",
      "import { readState } from '../capture/index.ts';",
      "import { parseDefinition } from '../projection/index.ts';",
      "import { readProjections } from './target-meta.ts';",
      "import { InvalidInputError } from '../errors.ts';",
      "import { REASONS } from '../reasons.ts';",
      'export const all = [openDatabase, readState, parseDefinition, readProjections, InvalidInputError, REASONS];',
    ].join('\n');
    expect(await lint('src/apply/downward.ts', code + '\n')).toEqual([]);
  });

  test('cli/ imports the library only through the barrel, type-only imports, errors.ts and reasons.ts included', async () => {
    for (const code of [
      "import type { Db } from '../sqlite/index.ts';\nexport type D = Db;\n",
      "import { SluiceError } from '../errors.ts';\nexport const E = SluiceError;\n",
      "import { REASONS } from '../reasons.ts';\nexport const R = REASONS;\n",
    ]) {
      expect(await lint('src/cli/direct.ts', code), code).toEqual([
        expect.stringContaining('cli/ imports the library only through src/index.ts'),
      ]);
    }
    expect(
      await lint(
        'src/cli/barrel.ts',
        "import { SluiceError, type Db } from '../index.ts';\nimport { packageRoot } from './package-root.ts';\nexport const all = [SluiceError, packageRoot];\nexport type D = Db;\n",
      ),
    ).toEqual([]);
  });

  test('only cli/ imports the barrel, and the barrel exports no cli/ code', async () => {
    expect(await lint('src/capture/barrel.ts', "import { openDatabase } from '../index.ts';\nexport const f = openDatabase;\n")).toEqual([
      expect.stringContaining('Only src/cli/ imports the barrel'),
    ]);
    expect(await lint('src/feed/barrel.ts', "import { openDatabase } from 'sluice';\nexport const f = openDatabase;\n")).toEqual([
      expect.stringContaining('Only src/cli/ imports the barrel'),
    ]);
    expect(await lint('src/index.ts', "export { main } from './cli/index.ts';\n")).toEqual([
      expect.stringContaining('exports no cli/ code'),
    ]);
  });

  test('product code does not import fixtures/, and errors.ts and reasons.ts import no layer', async () => {
    expect(
      await lint('src/cli/fixture.ts', "import { buildTracker } from '../../fixtures/tracker.ts';\nexport const f = buildTracker;\n"),
    ).toEqual([expect.stringContaining('does not import fixtures/')]);
    expect(await lint('src/errors.ts', "import type { Db } from './sqlite/index.ts';\nexport type D = Db;\n")).toEqual([
      expect.stringContaining('import none of them'),
    ]);
    expect(
      await lint('src/reasons.ts', "import type { ProjectionRecord } from './apply/target/index.ts';\nexport type P = ProjectionRecord;\n"),
    ).toEqual([expect.stringContaining('import none of them')]);
  });
});

describe('entries (docs/architecture.md, "Entries")', () => {
  test('cli/ loads the broker entry only with import() (an import type is erased), and no other broker file', async () => {
    const ok = [
      "export const load = () => import('../broker/index.ts');\n",
      "import type { SubscribedBatch } from '../broker/index.ts';\nexport type B = SubscribedBatch;\n",
      "export type P = import('../broker/index.ts').Publisher;\n",
    ];
    for (const code of ok) expect(await lint('src/cli/publish-like.ts', code), code).toEqual([]);
    const loadsAtStart = [
      "import { subscribe } from '../broker/index.ts';\nexport const s = subscribe;\n",
      // verbatimModuleSyntax keeps this as `import {} from '../broker/index.ts'`, which loads it.
      "import { type SubscribedBatch } from '../broker/index.ts';\nexport type B = SubscribedBatch;\n",
      "export { subscribe } from '../broker/index.ts';\n",
      "export * from '../broker/index.ts';\n",
    ];
    for (const code of loadsAtStart)
      expect(await lint('src/cli/publish-like.ts', code), code).toEqual([expect.stringContaining("await import('../broker/index.ts')")]);
    expect(await lint('src/cli/deep.ts', "export const load = () => import('../broker/publish.ts');\n")).toEqual([
      expect.stringContaining('reaches past the face of src/broker/'),
      expect.stringContaining('cli/ imports the library only through src/index.ts'),
    ]);
  });

  test('cli/ imports src/internal.ts, no layer does, and neither barrel reaches the broker', async () => {
    expect(await lint('src/cli/internal-user.ts', "import { shellWord } from '../internal.ts';\nexport const s = shellWord;\n")).toEqual(
      [],
    );
    expect(await lint('src/apply/internal-user.ts', "import { shellWord } from '../internal.ts';\nexport const s = shellWord;\n")).toEqual([
      expect.stringContaining('Only src/cli/ imports the barrel'),
    ]);
    for (const file of ['src/index.ts', 'src/internal.ts']) {
      expect(await lint(file, "export type { NatsTarget } from './broker/connection/index.ts';\n"), file).toEqual([
        expect.stringContaining('sluice/broker'),
      ]);
      expect(await lint(file, "export * from './broker/index.ts';\n"), file).toEqual([expect.stringContaining('sluice/broker')]);
    }
  });

  test('only broker/ imports the NATS client', async () => {
    const code = "import { connect } from '@nats-io/transport-node';\nexport const c = connect;\n";
    expect(await lint('src/broker/client.ts', code)).toEqual([]);
    for (const file of ['src/cli/client.ts', 'src/export/client.ts', 'src/apply/sync/client.ts', 'src/index.ts', 'src/internal.ts'])
      expect(await lint(file, code), file).toEqual([expect.stringContaining('Only src/broker/ imports the NATS client')]);
  });
});
