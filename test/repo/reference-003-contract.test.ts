// the evolution contract of reference 003 has every named symbol and test
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, test, expect } from 'vitest';

/*
 * The offline gate of reference 003 (its "Exit gate"): every contract
 * symbol is declared in the file that owns it, and every required
 * transition has a test whose title starts with 003's exact name. It reads
 * files only (no database, no build), and is conservative: a name in a
 * comment or in a string that is not a test title does not count.
 * 003's Postgres-only transitions are listed as not applicable, with why.
 */

const ROOT = path.join(path.dirname(fileURLToPath(import.meta.url)), '../..');

/** 003's required deterministic tests (LC-1 and LC-2) that have a SQLite counterpart. */
export const REQUIRED_TESTS = [
  'test_explain_alter_classifies_compatible_without_mutation',
  'test_explain_alter_classifies_rebuildable_without_mutation',
  'test_explain_alter_rejects_without_mutation',
  'test_alter_query_proves_materialized_result_frontier_row_identity_auxiliary_state',
  'test_shadow_rebuild_atomic_swap_preserves_old_result_until_cutover',
  'test_shadow_rebuild_interruption_resumes_or_rolls_back',
  'test_schema_evolution_transactional_ddl_rollback',
  'test_schema_evolution_additive_column_continues_or_rebuilds',
  'test_schema_evolution_destructive_column_suspends_with_reason_code',
  'test_schema_evolution_rename_chain_preserves_or_suspends_explicitly',
  'test_schema_evolution_recreated_object_oid_is_not_reused',
  'test_schema_evolution_dependency_oid_change_invalidates_proof',
  'test_schema_evolution_refresh_concurrent_with_ddl',
] as const;

/** Transitions whose tests must cover these projection kinds too, each in a title starting `<name> (<kind>` (issue 13: not only mirrors). */
export const REQUIRED_KINDS: Readonly<Partial<Record<(typeof REQUIRED_TESTS)[number], readonly string[]>>> = {
  test_shadow_rebuild_atomic_swap_preserves_old_result_until_cutover: ['fts5', 'custom'],
  test_shadow_rebuild_interruption_resumes_or_rolls_back: ['fts5', 'custom'],
};

/** 003's transitions with no SQLite counterpart: not tests, and why. */
export const NOT_APPLICABLE: Readonly<Record<string, string>> = {
  test_schema_evolution_schema_move_and_owner_change:
    'SQLite has no schemas to move a table between (an attached database is another file, which capture refuses) and no object owners or roles',
  test_schema_evolution_extension_upgrade_overlap:
    'sluice depends on no extension whose upgrade could overlap a refresh: FTS5 is compiled into SQLite, and a projection reads no loadable extension',
};

/** A symbol and where it must be declared: a file, or any file under a folder (ending in /). */
interface OwnedSymbol {
  readonly name: string;
  readonly owners: readonly string[];
  /** How it must appear: exported as a declaration (default), or as a member of AlterClassification. */
  readonly as?: 'classification';
}

export const REQUIRED_SYMBOLS: readonly OwnedSymbol[] = [
  { name: 'AlterClassification', owners: ['src/projection/'] },
  { name: 'Compatible', owners: ['src/projection/'], as: 'classification' },
  { name: 'Rebuildable', owners: ['src/projection/'], as: 'classification' },
  { name: 'Rejected', owners: ['src/projection/'], as: 'classification' },
  { name: 'AlterStateOracle', owners: ['src/projection/'] },
  { name: 'explainAlter', owners: ['src/apply/evolution/explain.ts'] },
  { name: 'AlterReasonCode', owners: ['src/reasons.ts', 'src/projection/'] },
  { name: 'atomicSwapShadow', owners: ['src/apply/rebuild/shadow-build.ts'] },
  { name: 'resumeOrRollbackShadowBuild', owners: ['src/apply/rebuild/shadow-build.ts'] },
];

/** Files by their path from the root (with /), text as read. */
export type Tree = ReadonlyMap<string, string>;

function readTree(dir: string, out = new Map<string, string>()): Map<string, string> {
  for (const e of fs.readdirSync(path.join(ROOT, dir), { withFileTypes: true })) {
    const rel = `${dir}/${e.name}`;
    if (e.isDirectory()) readTree(rel, out);
    else if (e.name.endsWith('.ts')) out.set(rel, fs.readFileSync(path.join(ROOT, rel), 'utf8'));
  }
  return out;
}

/**
 * Every test title in a test file: the first argument of test(), it(), or
 * test.for([...])() and the like, when it is a plain string literal.
 */
export function testTitles(text: string): string[] {
  const out: string[] = [];
  // Commented-out code is not a test.
  const code = text.replace(/^\s*\/\*[\s\S]*?\*\//gm, '').replace(/^\s*\/\/.*$/gm, '');
  const call =
    /\b(?:test|it)(?:\.(?:only|skip|todo|concurrent|sequential|fails))*(?:\.(?:for|each)\(\[[\s\S]*?\]\s*(?:as const)?\s*\))?\(\s*(['"`])((?:\\.|(?!\1)[^\\])*)\1/g;
  for (const m of code.matchAll(call)) out.push(m[2] as string);
  return out;
}

/** What the gate finds missing in `tree` (empty: the gate passes). */
export function gateFindings(tree: Tree): string[] {
  const findings: string[] = [];
  const titles = [...tree]
    .filter(([f]) => f.startsWith('test/') && f.endsWith('.test.ts'))
    .flatMap(([f, text]) => testTitles(text).map((t) => ({ f, t })));
  for (const name of REQUIRED_TESTS) {
    const found = titles.filter(({ t }) => t === name || t.startsWith(`${name}:`) || t.startsWith(`${name} `));
    if (found.length === 0) findings.push(`no test title in test/ starts with ${name}`);
    for (const kind of REQUIRED_KINDS[name] ?? [])
      if (!titles.some(({ t }) => t.startsWith(`${name} (${kind}`))) findings.push(`no test title in test/ starts with ${name} (${kind}`);
  }
  for (const name of Object.keys(NOT_APPLICABLE))
    if (REQUIRED_TESTS.includes(name as never)) findings.push(`${name} is both required and not applicable`);
  for (const s of REQUIRED_SYMBOLS) {
    const files = [...tree].filter(([f]) => s.owners.some((o) => (o.endsWith('/') ? f.startsWith(o) : f === o)));
    const declared =
      s.as === 'classification'
        ? (text: string) => new RegExp(`export type AlterClassification\\s*=[^;]*'${s.name}'`).test(text)
        : (text: string) =>
            new RegExp(`export (?:declare )?(?:async )?(?:type|interface|function|const|class|enum) ${s.name}\\b`).test(text);
    if (!files.some(([, text]) => declared(text))) findings.push(`${s.name} is not declared in ${s.owners.join(' or ')}`);
  }
  return findings;
}

describe('the offline gate of reference 003', () => {
  test('every symbol 003 names is declared in its owning file, and every transition it requires has a test named after it', () => {
    const tree = new Map([...readTree('src'), ...readTree('test')]);
    expect(gateFindings(tree)).toEqual([]);
  });

  test('the gate fails when a required test title or symbol is renamed, and a name only in a comment does not satisfy it', () => {
    const tree = new Map([...readTree('src'), ...readTree('test')]);
    const rename = (file: string, from: string, to: string) => {
      const text = tree.get(file);
      expect(text, file).toContain(from);
      return new Map(tree).set(file, (text as string).split(from).join(to));
    };
    const before = gateFindings(tree);
    expect(before.filter((x) => /atomic_swap|atomicSwapShadow|Rejected/.test(x))).toEqual([]);
    // Renamed in every file that has it (the kinds have tests of their own under the same name).
    const title = 'test_shadow_rebuild_atomic_swap';
    const holders = [...tree].filter(([f, text]) => f.startsWith('test/apply/') && testTitles(text).some((t) => t.startsWith(title)));
    expect(holders.map(([f]) => f)).toContain('test/apply/rebuild/atomic-swap.test.ts');
    const renamedTest = new Map(tree);
    for (const [f, text] of holders)
      renamedTest.set(f, text.split(`'${title}`).join(`'shadow_swap`).split(`"${title}`).join(`"shadow_swap`));
    expect(gateFindings(renamedTest)).toContain(
      'no test title in test/ starts with test_shadow_rebuild_atomic_swap_preserves_old_result_until_cutover',
    );
    const renamedSymbol = rename('src/apply/rebuild/shadow-build.ts', 'export function atomicSwapShadow', 'export function swapShadow');
    expect(gateFindings(renamedSymbol)).toContain('atomicSwapShadow is not declared in src/apply/rebuild/shadow-build.ts');
    const noCustom = rename(
      'test/apply/rebuild/interrupted-fts5-custom.test.ts',
      'test_shadow_rebuild_interruption_resumes_or_rolls_back (custom)',
      'interruption (custom)',
    );
    expect(gateFindings(noCustom)).toEqual([
      'no test title in test/ starts with test_shadow_rebuild_interruption_resumes_or_rolls_back (custom',
    ]);
    const lostMember = rename('src/projection/evolution/classify.ts', "| 'Rejected'", '');
    expect(gateFindings(lostMember)).toContain('Rejected is not declared in src/projection/');
  });

  test('the titles it reads are test titles: plain, multi-line and test.for ones, not commented-out ones', () => {
    const text = `test('a: one', () => {});\n  test(\n    "b: two",\n  async () => {});\n test.for([[1, 'x']] as const)('c: %s', () => {});\n// test('d')\nconst t = 'test_x';`;
    expect(testTitles(text)).toEqual(['a: one', 'b: two', 'c: %s']);
  });
});
