// ESLint: typescript-eslint's recommended rules, and the layer boundaries of
// src/ (docs/architecture.md, "Layers" and "Entries"): a layer imports only
// lower layers; cli/ imports the library only through the barrels
// src/index.ts and src/internal.ts, and the broker only as
// import('../broker/index.ts'); nothing else imports the barrels; only
// broker/ imports the NATS client; product code never imports fixtures/.
// Transactions go through src/sqlite/transaction.ts alone (docs/architecture.md,
// "Transactions"). In src/ and test/, a file imports another folder of src/
// only through its face, the folder's index.ts (docs/architecture.md, "Faces").
import path from 'node:path';
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { defineConfig } from 'eslint/config';

/** Lowest first: the order docs/architecture.md states (a test holds them equal). */
export const LAYERS = ['sqlite', 'capture', 'feed', 'projection', 'apply', 'export', 'broker', 'pipeline', 'cli'];

const SRC = path.join(import.meta.dirname, 'src');

/**
 * Folders of src/ that are one concept with their sub-folders (their
 * sub-folders have no face of their own): projection/'s definitions, kinds
 * and evolution need each other both ways. scripts/apply-faces.ts reads it.
 */
export const WHOLE_FOLDERS = ['projection'];

/**
 * The concept folder (absolute) of a file of src/: the folder it is in, or the
 * one of WHOLE_FOLDERS it is under; undefined for a file of src/ itself
 * (errors.ts, reasons.ts, the entries) or outside src/.
 */
export function conceptFolder(file) {
  const dir = path.dirname(path.resolve(file));
  if (dir === SRC || !dir.startsWith(SRC + path.sep)) return undefined;
  const whole = WHOLE_FOLDERS.map((w) => path.join(SRC, w)).find((w) => dir === w || dir.startsWith(w + path.sep));
  return whole ?? dir;
}

/** The relative specifier of each import, re-export, import() and import type of a file, with its node. */
function eachImport(context, check) {
  const on = (node, source) => {
    if (source !== undefined && source !== null && typeof source.value === 'string' && /^\.\.?\//.test(source.value))
      check(node, source.value);
  };
  return {
    ImportDeclaration: (n) => on(n, n.source),
    ExportNamedDeclaration: (n) => on(n, n.source),
    ExportAllDeclaration: (n) => on(n, n.source),
    ImportExpression: (n) => on(n, n.source),
    TSImportType: (n) => on(n, n.source ?? n.argument?.literal),
  };
}

/**
 * sluice/faces: a file of src/ or test/ imports a folder of src/ other than
 * its own only through that folder's index.ts. sluice/barrel: no file of a
 * layer but cli/ imports src/index.ts or src/internal.ts (a relative path
 * resolved, at any depth).
 */
const SLUICE = {
  rules: {
    faces: {
      meta: { type: 'problem', schema: [] },
      create(context) {
        const own = conceptFolder(context.filename);
        return eachImport(context, (node, spec) => {
          const target = path.resolve(path.dirname(context.filename), spec);
          const folder = conceptFolder(target);
          if (folder === undefined || folder === own) return;
          if (target === path.join(folder, 'index.ts')) return;
          const rel = path.relative(SRC, folder).split(path.sep).join('/');
          let face = path.relative(path.dirname(context.filename), path.join(folder, 'index.ts')).split(path.sep).join('/');
          if (!face.startsWith('.')) face = `./${face}`;
          context.report({
            node,
            message: `'${spec}' reaches past the face of src/${rel}/: import it from '${face}' (export it there; npx tsx scripts/apply-faces.ts does both). A file imports its own folder directly and other folders only through their index.ts (docs/architecture.md, "Faces").`,
          });
        });
      },
    },
    barrel: {
      meta: { type: 'problem', schema: [] },
      create(context) {
        return eachImport(context, (node, spec) => {
          const target = path.resolve(path.dirname(context.filename), spec);
          if (target === path.join(SRC, 'index.ts') || target === path.join(SRC, 'internal.ts'))
            context.report({ node, message: BARREL.message });
        });
      },
    },
  },
};

/**
 * A relative import of one of `dirs` (a folder under src/), or of `files` (a
 * file directly in src/), from a file in a layer folder (or, with `fromRoot`, in src/ itself).
 */
function srcTarget(dirs, files = [], fromRoot = false) {
  const alt = [...dirs.map((d) => `${d}(?:\\x2F|$)`), ...files.map((f) => f.replace('.', '\\.') + '$')].join('|');
  return `${fromRoot ? '^\\.\\x2F' : '^(?:\\.\\.\\x2F)+'}(?:${alt})`;
}

/**
 * Transaction control run as SQL: a string, or a template's text up to its
 * first `${`, that starts with one of these statements, in upper or lower
 * case (a lower-case `end` is too common a word to tell). A trigger body's
 * BEGIN ... END, a message that names them, and a user's own statement text
 * (a variable) are not one.
 */
const TRANSACTION_SQL = '^\\s*(?:BEGIN|COMMIT|END|ROLLBACK|SAVEPOINT|RELEASE|begin|commit|rollback|savepoint|release)(?:\\s|;|$)';
const TRANSACTION_MESSAGE =
  'Transactions go through src/sqlite/transaction.ts (writeTransaction, withReadTransaction, readSession, writeAlone, beginHeld...): no hand-written BEGIN, COMMIT, ROLLBACK, SAVEPOINT or RELEASE, and no better-sqlite3 db.transaction(), elsewhere. See docs/architecture.md, "Transactions".';
const TRANSACTIONS = [
  { selector: `Literal[value=/${TRANSACTION_SQL}/]`, message: TRANSACTION_MESSAGE },
  { selector: `TemplateLiteral > TemplateElement:first-child[value.cooked=/${TRANSACTION_SQL}/]`, message: TRANSACTION_MESSAGE },
  { selector: "CallExpression[callee.type='MemberExpression'][callee.property.name='transaction']", message: TRANSACTION_MESSAGE },
];

/**
 * One restriction: import declarations, re-exports (no-restricted-imports) and
 * import() expressions and types (no-restricted-syntax) whose specifier matches `regex`.
 * esquery regexes cannot hold a slash, hence \x2F. `loaded` restrictions
 * match only what loads the module when the importing file loads: an import
 * or re-export that is not `import type` / `export type` (under
 * verbatimModuleSyntax, `import { type X }` still loads it). With them
 * (no-restricted-syntax takes one list per file), `syntax`: the transaction
 * statements, unless the file is the transaction module.
 */
function restrict(restrictions, loaded = [], syntax = TRANSACTIONS) {
  return {
    '@typescript-eslint/no-restricted-imports': ['error', { patterns: restrictions.map(({ regex, message }) => ({ regex, message })) }],
    'no-restricted-syntax': [
      'error',
      ...restrictions.flatMap(({ regex, message }) => [
        { selector: `ImportExpression[source.value=/${regex}/]`, message },
        { selector: `TSImportType[source.value=/${regex}/]`, message },
      ]),
      ...loaded.flatMap(({ regex, message }) => [
        { selector: `ImportDeclaration[importKind!='type'][source.value=/${regex}/]`, message },
        { selector: `ExportNamedDeclaration[exportKind!='type'][source.value=/${regex}/]`, message },
        { selector: `ExportAllDeclaration[exportKind!='type'][source.value=/${regex}/]`, message },
      ]),
      ...syntax,
    ],
  };
}

const ORDER = LAYERS.join(' < ');
const FIXTURES = {
  regex: '(?:^|\\x2F)fixtures(?:\\x2F|$)',
  message: 'Product code does not import fixtures/: move what it needs under src/.',
};
const BARREL = {
  // src/index.ts and src/internal.ts by a relative path: sluice/barrel, which resolves it.
  regex: '^sluice(?:\\x2F|$)',
  message: "Only src/cli/ imports the barrel src/index.ts (and src/internal.ts): import the folder's face (its index.ts) itself.",
};
const NATS_CLIENT = {
  regex: '^@nats-io(?:\\x2F|$)',
  message:
    'Only src/broker/ imports the NATS client (@nats-io/*): the main entry and every command but publish and subscribe run without it (docs/architecture.md, "Entries").',
};
/** From src/index.ts or src/internal.ts: any broker/ file. */
const BROKER_FROM_BARREL = {
  regex: srcTarget(['broker'], [], true),
  message:
    'The main entry loads no NATS client: the broker is its own entry, sluice/broker (src/broker/index.ts), which cli/ loads with import() (docs/architecture.md, "Entries").',
};

function layerRules(i, syntax = TRANSACTIONS) {
  const layer = LAYERS[i];
  if (layer === 'cli') {
    // broker/ only through its entry, broker/index.ts; the rest of the layers not at all.
    const lower = {
      regex: `${srcTarget(
        LAYERS.slice(0, i).filter((l) => l !== 'broker'),
        ['errors.ts', 'reasons.ts'],
      )}|^(?:\\.\\.\\x2F)+broker(?:\\x2F(?!index\\.ts$)|$)`,
      message:
        'cli/ imports the library only through src/index.ts (what users get; what they do not, through src/internal.ts) and the broker through src/broker/index.ts: export what it needs from one of them and import it from there.',
    };
    const broker = {
      regex: '^(?:\\.\\.\\x2F)+broker\\x2Findex\\.ts$',
      message:
        'cli/ loads the broker (and the NATS client) only when a command needs it: `const broker = await import(\'../broker/index.ts\')` in its action, or `import type` (docs/architecture.md, "Entries").',
    };
    return restrict([lower, FIXTURES, NATS_CLIENT], [broker], syntax);
  }
  const higher = LAYERS.slice(i + 1);
  const upward = {
    regex: srcTarget(higher),
    message: `${layer}/ may not import ${higher.map((h) => `${h}/`).join(', ')}: a layer imports only lower ones (${ORDER}). Move the code down, or this file up.`,
  };
  return restrict([upward, BARREL, FIXTURES, ...(layer === 'broker' ? [] : [NATS_CLIENT])], [], syntax);
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
  { plugins: { sluice: SLUICE } },
  {
    files: LAYERS.filter((l) => l !== 'cli').map((l) => `src/${l}/**/*.ts`),
    rules: { 'sluice/barrel': 'error' },
  },
  // bench/ and scripts/ may reach any module: they measure and generate from what they name.
  { files: ['src/**/*.ts', 'test/**/*.ts'], rules: { 'sluice/faces': 'error' } },
  // The one module that runs transaction control.
  { files: ['src/sqlite/transaction.ts'], rules: layerRules(LAYERS.indexOf('sqlite'), []) },
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
      BROKER_FROM_BARREL,
      {
        regex: srcTarget([], ['internal.ts'], true),
        message: 'The main entry does not re-export src/internal.ts: a name users need is exported from its own module.',
      },
      FIXTURES,
      NATS_CLIENT,
    ]),
  },
  {
    files: ['src/internal.ts'],
    rules: restrict([
      {
        regex: srcTarget(['cli'], [], true),
        message: 'src/internal.ts is what cli/ calls beyond the main entry: it exports no cli/ code.',
      },
      BROKER_FROM_BARREL,
      FIXTURES,
      NATS_CLIENT,
    ]),
  },
);
