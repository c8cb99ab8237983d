// ESLint: typescript-eslint's recommended rules, and the layer boundaries of
// src/ (docs/architecture.md, "Layers"): a layer imports only lower layers, cli/ imports
// the library only through the barrel src/index.ts, nothing else imports the
// barrel, and product code never imports fixtures/.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { defineConfig } from 'eslint/config';

/** Lowest first: the order docs/architecture.md states (a test holds them equal). */
export const LAYERS = ['sqlite', 'capture', 'feed', 'projection', 'apply', 'export', 'broker', 'pipeline', 'cli'];

/**
 * A relative import of one of `dirs` (a folder under src/), or of `files` (a
 * file directly in src/), from a file in a layer folder (or, with `fromRoot`, in src/ itself).
 */
function srcTarget(dirs, files = [], fromRoot = false) {
  const alt = [...dirs.map((d) => `${d}(?:\\x2F|$)`), ...files.map((f) => f.replace('.', '\\.') + '$')].join('|');
  return `${fromRoot ? '^\\.\\x2F' : '^(?:\\.\\.\\x2F)+'}(?:${alt})`;
}

/**
 * One restriction: import declarations, re-exports (no-restricted-imports) and
 * import() expressions and types (no-restricted-syntax) whose specifier matches `regex`.
 * esquery regexes cannot hold a slash, hence \x2F.
 */
function restrict(restrictions) {
  return {
    '@typescript-eslint/no-restricted-imports': ['error', { patterns: restrictions.map(({ regex, message }) => ({ regex, message })) }],
    'no-restricted-syntax': [
      'error',
      ...restrictions.flatMap(({ regex, message }) => [
        { selector: `ImportExpression[source.value=/${regex}/]`, message },
        { selector: `TSImportType[source.value=/${regex}/]`, message },
      ]),
    ],
  };
}

const ORDER = LAYERS.join(' < ');
const FIXTURES = {
  regex: '(?:^|\\x2F)fixtures(?:\\x2F|$)',
  message: 'Product code does not import fixtures/: move what it needs under src/.',
};
const BARREL = {
  regex: `${srcTarget([], ['index.ts'])}|^sluice(?:\\x2F|$)`,
  message: 'Only src/cli/ imports the barrel src/index.ts: import the module itself.',
};

function layerRules(i) {
  const layer = LAYERS[i];
  if (layer === 'cli') {
    const lower = {
      regex: srcTarget(LAYERS.slice(0, i), ['errors.ts', 'reasons.ts']),
      message: 'cli/ imports the library only through src/index.ts: export what it needs from the barrel and import it from ../index.ts.',
    };
    return restrict([lower, FIXTURES]);
  }
  const higher = LAYERS.slice(i + 1);
  const upward = {
    regex: srcTarget(higher),
    message: `${layer}/ may not import ${higher.map((h) => `${h}/`).join(', ')}: a layer imports only lower ones (${ORDER}). Move the code down, or this file up.`,
  };
  return restrict([upward, BARREL, FIXTURES]);
}

export default defineConfig(
  { ignores: ['dist/', 'node_modules/', 'bench/out/', 'tmp/'] },
  js.configs.recommended,
  tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      // Flags the defensive `let x = init` before a try or a loop that assigns it.
      'no-useless-assignment': 'off',
    },
  },
  {
    files: ['**/*.js'],
    languageOptions: { globals: { process: 'readonly', console: 'readonly', URL: 'readonly' } },
  },
  {
    // Kysely<any>: a custom projection's database has no schema type.
    files: [
      'src/projection/definition.ts',
      'src/projection/kinds/custom/handler-db.ts',
      'src/projection/kinds/custom/schema.ts',
      'projections/*.ts',
    ],
    rules: { '@typescript-eslint/no-explicit-any': 'off' },
  },
  {
    // Tests keep helper types and fixture parameters they do not use, and drain iterators with [...it].
    files: ['test/**/*.ts'],
    rules: { '@typescript-eslint/no-unused-vars': 'off', '@typescript-eslint/no-unused-expressions': 'off' },
  },
  {
    // 2^63 - 1 as a REAL literal: the rounding is what the test is about.
    files: ['test/capture/exactness.test.ts'],
    rules: { 'no-loss-of-precision': 'off' },
  },
  ...LAYERS.map((layer, i) => ({ files: [`src/${layer}/**/*.ts`], rules: layerRules(i) })),
  {
    files: ['src/errors.ts', 'src/reasons.ts'],
    rules: restrict([
      {
        regex: srcTarget(LAYERS, ['index.ts'], true),
        message: 'src/errors.ts and src/reasons.ts are below every layer: they import none of them.',
      },
      FIXTURES,
    ]),
  },
  {
    files: ['src/index.ts'],
    rules: restrict([
      { regex: srcTarget(['cli'], [], true), message: 'The barrel src/index.ts is what cli/ calls: it exports no cli/ code.' },
      FIXTURES,
    ]),
  },
);
