import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/*
 * Every test's title chain (describe > ... > test), one a line, sorted, as
 * vitest collects them: `vitest list` imports the test files and runs no
 * test. Issue 20 asks that a redesign keep the multiset of titles: list them
 * on the tree before and after and compare.
 *
 *   npx tsx scripts/test-titles.ts > before.txt            titles only (what must not change)
 *   npx tsx scripts/test-titles.ts --with-files > x.txt     each line prefixed by its file and a tab
 *   npx tsx scripts/test-titles.ts -- test/feed             vitest's own arguments after --
 *
 * The count goes to stderr. A duplicate title chain shows as two lines.
 */

const ROOT = path.resolve(import.meta.dirname, '..');
const args = process.argv.slice(2);
const dashes = args.indexOf('--');
const own = dashes === -1 ? args : args.slice(0, dashes);
const vitestArgs = dashes === -1 ? [] : args.slice(dashes + 1);
const withFiles = own.includes('--with-files');

const out = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'test-titles-')), 'list.json');
const r = spawnSync('npx', ['vitest', 'list', '--json', `--outputFile=${out}`, ...vitestArgs], {
  cwd: ROOT,
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'inherit'],
  maxBuffer: 1 << 28,
});
// vitest 4 writes the JSON to stdout when --outputFile is not honoured by `list`.
const text = fs.existsSync(out) ? fs.readFileSync(out, 'utf8') : r.stdout.slice(r.stdout.indexOf('['));
fs.rmSync(path.dirname(out), { recursive: true, force: true });
if (r.status !== 0) {
  process.stderr.write(r.stdout);
  console.error(`vitest list exited ${r.status}`);
  process.exit(1);
}
const tests = JSON.parse(text) as { name: string; file: string }[];
const lines = tests.map((t) => (withFiles ? `${path.relative(ROOT, t.file)}\t${t.name}` : t.name)).sort();
process.stdout.write(lines.map((l) => `${l}\n`).join(''));
console.error(`${lines.length} tests in ${new Set(tests.map((t) => t.file)).size} files`);
