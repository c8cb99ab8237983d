import fs from 'node:fs';
import path from 'node:path';

/*
 * Import circles among the TypeScript files under a folder: every relative
 * import, re-export, `import type`, `import()` and side-effect import
 * (`import './x.ts'`) counts (a type-only import is still a dependency a
 * reader must follow). docs/architecture.md asks for none; a test in
 * `npm test` runs this over src/ (and `npx tsx scripts/import-cycles.ts`
 * prints them).
 */

const SPECIFIER =
  /(?:^|[\s;])(?:import|export)\s[^'";]*?from\s*['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)|(?:^|[\s;])import\s*['"](\.{1,2}\/[^'"]+)['"]/g;

function tsFiles(dir: string): string[] {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    return e.isDirectory() ? tsFiles(p) : p.endsWith('.ts') ? [p] : [];
  });
}

/** Each circle (a strongly connected set of two or more files, or a file importing itself), as paths relative to `root`, sorted. */
export function importCycles(root: string): string[][] {
  const files = tsFiles(root);
  const known = new Set(files);
  const edges = new Map<string, string[]>();
  for (const f of files) {
    const text = fs.readFileSync(f, 'utf8');
    const to = new Set<string>();
    for (const m of text.matchAll(SPECIFIER)) {
      const target = path.resolve(path.dirname(f), (m[1] ?? m[2] ?? m[3]) as string);
      if (known.has(target)) to.add(target);
    }
    edges.set(f, [...to]);
  }
  // Tarjan's strongly connected components.
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next++;
    stack.push(v);
    onStack.add(v);
    for (const w of edges.get(v) ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, index.get(w) as number));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop() as string;
      onStack.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1 || (edges.get(v) ?? []).includes(v))
      out.push(scc.map((f) => path.relative(root, f).split(path.sep).join('/')).sort());
  };
  for (const f of files) if (!index.has(f)) visit(f);
  return out.sort((a, b) => (a[0] as string).localeCompare(b[0] as string));
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(import.meta.filename ?? '')) {
  const cycles = importCycles(path.resolve(process.argv[2] ?? 'src'));
  for (const c of cycles) console.log(c.join(' -> '));
  process.exitCode = cycles.length === 0 ? 0 : 1;
}
