import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';

/*
 * Moves the test files to the folders scripts/test-layout.tsv gives them
 * (issue 20, item 7), on the current tree, in one go:
 *
 *   npx tsx scripts/apply-test-layout.ts [--check] [--allow-unlisted] [--tsv FILE]
 *
 * For each line `old<TAB>new` it `git mv`s the file, rewrites the relative
 * paths inside it (import, export ... from, import(), require(), new
 * URL(..., import.meta.url), and path.join/resolve(<this file's folder>,
 * '..', ...)) so they reach the same files from the new folder, and writes
 * the old name, a sentence, as the file's first line `// <sentence>` when
 * no describe/test title in it says that sentence already (titles are
 * never touched: a describe wrapper would change them). Then it rewrites,
 * in every tracked text file, the relative imports that reached a moved
 * file and each path that names a moved test file, whole or cut short
 * (`test/cli/every-suspension-code-...test.ts`), and a folder whose tests
 * all went to one other folder (`test/layers/`). Last, prettier formats
 * the files it wrote (a longer path can push an import past the width).
 *
 * It changes nothing and exits 1 when a source path of the TSV is missing
 * (the TSV is older or newer than the tree: it prints which), or when a
 * test file in test/ is on no line (a test added since: it prints a line
 * to complete; --allow-unlisted leaves such files where they are and goes
 * on). --check prints the plan and the problems and changes nothing.
 */

const ROOT = path.resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const check = args.includes('--check');
const allowUnlisted = args.includes('--allow-unlisted');
const tsvArg = args.indexOf('--tsv');
const TSV = path.resolve(ROOT, tsvArg === -1 ? 'scripts/test-layout.tsv' : (args[tsvArg + 1] ?? ''));

interface Move {
  readonly from: string;
  readonly to: string;
}

const posix = (p: string) => p.split(path.sep).join('/');
const abs = (rel: string) => path.join(ROOT, rel);
const exists = (rel: string) => fs.existsSync(abs(rel));

function readTsv(file: string): Move[] {
  const moves: Move[] = [];
  const problems: string[] = [];
  fs.readFileSync(file, 'utf8')
    .split('\n')
    .forEach((line, i) => {
      if (line.trim() === '' || line.startsWith('#')) return;
      const cols = line.split('\t');
      const [from, to] = cols;
      if (cols.length !== 2 || from === undefined || to === undefined) problems.push(`line ${i + 1}: not two tab-separated paths: ${line}`);
      else if (![from, to].every((p) => p.startsWith('test/') && p.endsWith('.test.ts')))
        problems.push(`line ${i + 1}: both paths must be test/**/*.test.ts: ${line}`);
      else moves.push({ from, to });
    });
  const dup = (xs: string[]) => xs.filter((x, i) => xs.indexOf(x) !== i);
  for (const d of dup(moves.map((m) => m.from))) problems.push(`${d} is on two lines`);
  for (const d of dup(moves.map((m) => m.to))) problems.push(`two files go to ${d}`);
  for (const d of dup(moves.map((m) => path.posix.basename(m.to)))) problems.push(`two test files would be named ${d}`);
  if (problems.length > 0) fail(problems);
  return moves;
}

function fail(lines: readonly string[]): never {
  for (const l of lines) console.error(l);
  process.exit(1);
}

function testFiles(dir = 'test'): string[] {
  return fs.readdirSync(abs(dir), { withFileTypes: true }).flatMap((e) => {
    const rel = `${dir}/${e.name}`;
    return e.isDirectory() ? testFiles(rel) : rel.endsWith('.test.ts') ? [rel] : [];
  });
}

/** Tracked text files the path rewrites may touch (not the TSV, whose old paths must stay). */
function trackedTextFiles(): string[] {
  const out = execFileSync('git', ['ls-files', '-z'], { cwd: ROOT, encoding: 'utf8' });
  const skip = new Set([posix(path.relative(ROOT, TSV)), 'scripts/apply-test-layout.ts', 'package-lock.json']);
  return out
    .split('\0')
    .filter((f) => f !== '' && !skip.has(f) && /\.(ts|js|mjs|cjs|json|md|yml|yaml|txt)$/.test(f))
    .filter((f) => !f.startsWith('fixtures/') || f.endsWith('.md') || f.endsWith('.ts'));
}

// --- the old name as a sentence ------------------------------------------

const slug = (s: string) =>
  s
    .toLowerCase()
    .replace(/['’]/g, '')
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-|-$/g, '');

/** The sentence an old file name says, or undefined for a name that is already a subject (fewer than four words). */
function sentenceOf(file: string): string | undefined {
  const words = path.posix
    .basename(file)
    .replace(/(\.property)?\.test\.ts$/, '')
    .split('-');
  return words.length < 4 ? undefined : words.join(' ');
}

/** The describe/test/it titles that are plain string literals (a template with ${} cannot say the sentence whole). */
function titles(text: string): string[] {
  const call =
    /\b(?:describe|test|it)(?:\.(?:only|skip|todo|concurrent|sequential|fails))*(?:\.(?:for|each)\(\[[\s\S]*?\]\s*(?:as const)?\s*\)|\.each\([^()]*\))?\(\s*(['"`])((?:\\.|(?!\1)[^\\])*)\1/g;
  return [...text.matchAll(call)].map((m) => (m[2] as string).replace(/\\(.)/g, '$1'));
}

function withSentence(text: string, from: string): string {
  const sentence = sentenceOf(from);
  if (sentence === undefined) return text;
  const line = `// ${sentence}`;
  if (text.startsWith(`${line}\n`)) return text;
  if (titles(text).some((t) => slug(t) === slug(sentence))) return text;
  return `${line}\n${text}`;
}

// --- paths inside files ----------------------------------------------------

/** Where a moved file went, by its old path from the root. */
let moved = new Map<string, string>();

const newPathOf = (rel: string) => moved.get(rel) ?? rel;

function relSpecifier(fromDir: string, target: string): string {
  const r = posix(path.relative(abs(fromDir), abs(target)));
  return r.startsWith('.') ? r : `./${r}`;
}

const SPECIFIER = /(\bfrom\s*|\bimport\s*\(\s*|(?:^|[\s;])import\s+|\brequire\s*\(\s*|\bnew URL\(\s*)(['"])(\.{1,2}\/[^'"\n]*)\2/g;

/**
 * Relative specifiers of a file that was at `oldFile` and is now at
 * `newFile` (the same path when it stays), each made to reach the same
 * file, or that file's new place. A specifier that reaches no file from
 * the old place is text a test writes somewhere else (a lint fixture) and
 * stays as it is.
 */
function rewriteSpecifiers(text: string, oldFile: string, newFile: string): string {
  const oldDir = path.posix.dirname(oldFile);
  const newDir = path.posix.dirname(newFile);
  return text.replace(SPECIFIER, (all, lead: string, q: string, spec: string) => {
    const target = path.posix.normalize(path.posix.join(oldDir, spec));
    if (!exists(target) && !moved.has(target)) return all;
    const next = relSpecifier(newDir, newPathOf(target));
    const kept = spec.endsWith('/') && !next.endsWith('/') ? `${next}/` : next;
    return kept === spec ? all : `${lead}${q}${kept}${q}`;
  });
}

const HERE = String.raw`(?:import\.meta\.dirname|path\.dirname\(fileURLToPath\(import\.meta\.url\)\))`;
const FROM_HERE = new RegExp(String.raw`(${HERE})((?:\s*,\s*'[^'\n]*')+)`, 'g');

/** `path.join(<this file's folder>, '..', 'src')` and the like, made to reach the same place from the new folder. */
function rewriteFromHere(text: string, oldFile: string, newFile: string): string {
  const oldDir = path.posix.dirname(oldFile);
  const newDir = path.posix.dirname(newFile);
  if (oldDir === newDir) return text;
  return text.replace(FROM_HERE, (all, here: string, rest: string) => {
    const parts = [...rest.matchAll(/'([^'\n]*)'/g)].map((m) => m[1] as string);
    if (!parts.every((p) => /^(\.\.?|[\w.-]+)(\/(\.\.?|[\w.-]+))*$/.test(p))) return all;
    const target = path.posix.normalize(path.posix.join(oldDir, ...parts));
    const rel = path.posix.relative(newDir, target) || '.';
    const segs = rel.split('/');
    return parts.length === 1 ? `${here}, '${rel}'` : `${here}, ${segs.map((s) => `'${s}'`).join(', ')}`;
  });
}

/** Names of moved test files in prose or strings: whole, or cut short with `...` or `…`; and folders whose tests all went elsewhere. */
function rewriteNames(text: string, moves: readonly Move[], folders: ReadonlyMap<string, string>, unresolved: Set<string>): string {
  let out = text;
  for (const m of moves) if (m.from !== m.to) out = out.split(m.from).join(m.to);
  out = out.replace(/test\/[\w/'.-]*?(?:\.\.\.|…)[\w.…-]*/g, (token) => {
    const [prefix, ...rest] = token.split(/\.\.\.|…/);
    const words = rest
      .join('-')
      .replace(/(\.property)?\.test\.ts$|\.test$/, '')
      .split(/[-.]+/)
      .filter((w) => w !== '');
    const matches = (file: string) => {
      if (!file.startsWith(prefix as string)) return false;
      let at = (prefix as string).length;
      for (const w of words) {
        const i = file.indexOf(w, at);
        if (i === -1) return false;
        at = i + w.length;
      }
      return true;
    };
    const hits = moves.filter((m) => m.from !== m.to && matches(m.from));
    if (hits.length === 1) return (hits[0] as Move).to;
    // Cut short from a name that is already the new one, or one that stays: nothing to do.
    if (hits.length === 0 && moves.some((m) => matches(m.to))) return token;
    unresolved.add(token);
    return token;
  });
  for (const [from, to] of folders) out = out.replace(new RegExp(`${from.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}(?![\\w.-])`, 'g'), to);
  return out;
}

/** Old folders left with no test whose tests all went to one folder (`test/layers/` → `test/repo/`). */
function folderMoves(moves: readonly Move[], remaining: readonly string[]): Map<string, string> {
  const by = new Map<string, Set<string>>();
  for (const m of moves) {
    const d = `${path.posix.dirname(m.from)}/`;
    by.set(d, (by.get(d) ?? new Set()).add(`${path.posix.dirname(m.to)}/`));
  }
  const out = new Map<string, string>();
  for (const [from, tos] of by) {
    const to = [...tos][0] as string;
    if (from === 'test/' || tos.size !== 1 || from === to) continue;
    if (remaining.some((f) => f.startsWith(from))) continue;
    if (fs.existsSync(abs(from)) && fs.readdirSync(abs(from)).some((e) => e !== 'support' && !e.endsWith('.test.ts'))) continue;
    out.set(from, to);
  }
  return out;
}

// --- the run ----------------------------------------------------------------

// A line whose file is already at its new path (an earlier run applied it) is done: only the others move.
const lines = readTsv(TSV);
const moves = lines.filter((m) => m.from === m.to || exists(m.from) || !exists(m.to));
const inTree = testFiles();
const missing = moves.filter((m) => !exists(m.from));
const listed = new Set(lines.map((m) => m.from));
const destinations = new Set(lines.map((m) => m.to));
const unlisted = inTree.filter((f) => !listed.has(f) && !destinations.has(f));
const taken = moves.filter((m) => m.from !== m.to && exists(m.to));
const problems: string[] = [];
if (missing.length > 0)
  problems.push(
    `${missing.length} source path(s) of ${posix(path.relative(ROOT, TSV))} are not in the tree (moved already, renamed or deleted since the TSV was written):`,
    ...missing.map((m) => `  ${m.from}`),
  );
if (taken.length > 0) problems.push('destination(s) that exist already:', ...taken.map((m) => `  ${m.to}`));
if (unlisted.length > 0) {
  const lines = [
    `${unlisted.length} test file(s) on no line of the TSV (added since it was written): give each a line, old<TAB>new${allowUnlisted ? '; --allow-unlisted leaves them where they are' : ''}:`,
    ...unlisted.map((f) => `  ${f}\t?`),
  ];
  if (allowUnlisted) console.log(lines.join('\n'));
  else problems.push(...lines);
}
const newBase = new Map(moves.map((m) => [path.posix.basename(m.to), m.to]));
for (const f of unlisted)
  if (newBase.has(path.posix.basename(f)) && newBase.get(path.posix.basename(f)) !== f)
    problems.push(`${f} has the base name ${newBase.get(path.posix.basename(f))} would take`);
if (problems.length > 0) fail(problems);

moved = new Map(moves.filter((m) => m.from !== m.to).map((m) => [m.from, m.to]));
const remaining = [...inTree.filter((f) => !moved.has(f)), ...moved.values()];
const folders = folderMoves(moves, remaining);
const unresolved = new Set<string>();

/** New text for each file that changes, by its path after the move. */
const writes = new Map<string, string>();
const sentences: string[] = [];
for (const m of moves) {
  const before = fs.readFileSync(abs(m.from), 'utf8');
  let text = rewriteSpecifiers(before, m.from, m.to);
  text = rewriteFromHere(text, m.from, m.to);
  text = rewriteNames(text, moves, folders, unresolved);
  if (m.from !== m.to) {
    const withIt = withSentence(text, m.from);
    if (withIt !== text) sentences.push(m.to);
    text = withIt;
  }
  if (text !== before || m.from !== m.to) writes.set(m.to, text);
}
for (const f of trackedTextFiles()) {
  if (moved.has(f) || listed.has(f) || !exists(f)) continue;
  const before = fs.readFileSync(abs(f), 'utf8');
  let text = /\.(ts|js|mjs|cjs)$/.test(f) ? rewriteSpecifiers(before, f, f) : before;
  text = rewriteNames(text, moves, folders, unresolved);
  if (text !== before) writes.set(f, text);
}

console.log(
  `${moved.size} test files move, ${moves.length - moved.size} stay; ${sentences.length} get their old sentence as a first line.`,
);
for (const [from, to] of folders) console.log(`folder ${from} → ${to} (in prose and paths)`);
const others = [...writes.keys()].filter((f) => ![...moved.values()].includes(f));
console.log(`${others.length} other file(s) rewritten: ${others.join(', ')}`);
if (unresolved.size > 0) console.log(`names cut short that match no single test file (fix by hand): ${[...unresolved].join(', ')}`);
const stale = new Set<string>();
for (const f of trackedTextFiles())
  if (exists(f))
    for (const [p] of (writes.get(f) ?? fs.readFileSync(abs(f), 'utf8')).matchAll(/test\/[\w/'-]+\.test\.ts/g))
      if (!remaining.includes(p) && !exists(p)) stale.add(`${f}: ${p}`);
if (stale.size > 0)
  console.log(`names of test files that exist neither before nor after (stale, fix by hand):\n  ${[...stale].join('\n  ')}`);
if (check) {
  for (const [from, to] of moved) console.log(`  ${from} → ${to}`);
  process.exit(0);
}

for (const [from, to] of moved) {
  fs.mkdirSync(path.dirname(abs(to)), { recursive: true });
  execFileSync('git', ['mv', from, to], { cwd: ROOT });
}
for (const [f, text] of writes) fs.writeFileSync(abs(f), text);
for (const from of new Set([...moved.keys()].map((f) => path.posix.dirname(f))))
  if (fs.existsSync(abs(from)) && fs.readdirSync(abs(from)).length === 0) fs.rmdirSync(abs(from));
// A path made longer can push an import past the line width: format what was written, as `npm test` checks it.
execFileSync('npx', ['prettier', '--write', '--log-level=warn', ...writes.keys()], { cwd: ROOT, stdio: 'inherit' });
console.log('done: now npx tsc --noEmit, npx eslint test scripts src, and run some of the moved tests.');
