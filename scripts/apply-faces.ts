import fs from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
// @ts-expect-error -- eslint.config.js is plain JavaScript, with no types to read
import { conceptFolder as conceptFolderOf } from '../eslint.config.js';

/*
 * Faces (docs/architecture.md, "Faces"): every folder under src/ that holds
 * modules is a concept folder (but the sub-folders of eslint.config.js's
 * WHOLE_FOLDERS, which are parts of theirs), and its index.ts is its face. A file imports
 * the files of its own folder directly, and anything of another folder only
 * through that folder's index.ts (src/errors.ts, src/reasons.ts and the
 * entries src/index.ts, src/internal.ts sit in src/ itself, in no folder).
 * This script makes the tree so, and can be run again at any time (after a
 * merge that brought new deep imports, after a file moved inside a folder):
 *
 *   1. each face is written from what the files outside its folder import of
 *      it, in src/ and test/: one `export { ... } from './x.ts'` and one
 *      `export type { ... }` per file, by name, the names only tests import
 *      under a comment of their own. A face's leading comment is kept.
 *      src/broker/index.ts is also the package entry `sluice/broker`: it is
 *      never written, only checked to export what is imported of it.
 *   2. each import of src/ (and re-export, import(), import type) in src/ and
 *      test/ that reaches past a face is rewritten to the face, and imports of
 *      one face merged into one statement. An import of a file that is no
 *      longer there (it moved to another folder) goes to the face of the one
 *      folder that offers the names it takes.
 *
 * bench/, scripts/, fixtures/ and projections/ are not rewritten (they may
 * reach any module), but what they import of a face stays in it.
 *
 *   npx tsx scripts/apply-faces.ts           rewrite the tree
 *   npx tsx scripts/apply-faces.ts --check   list what would change, exit 1 if anything would
 *   npx tsx scripts/apply-faces.ts --graph   the import graph of the folders of src/, and its circles
 */

const ROOT = path.resolve(import.meta.dirname, '..');
const SRC = path.join(ROOT, 'src');
/** Rewritten to faces. */
const REWRITTEN = ['src', 'test'];
/** Read for what they import of faces, never rewritten. */
const READ_ONLY = ['bench', 'scripts', 'fixtures', 'projections'];
/** Faces that are entries of the package: checked, never written. */
const ENTRY_FACES = new Set([path.join(SRC, 'broker', 'index.ts')]);
const FACE = 'index.ts';

const rel = (p: string): string => path.relative(ROOT, p).split(path.sep).join('/');

function tsFiles(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' || e.name === 'out' ? [] : tsFiles(p);
    return p.endsWith('.ts') && !p.endsWith('.d.ts') ? [p] : [];
  });
}

/** The concept folder of a file of src/ (eslint.config.js holds the rule, so that the lint and this script agree). */
export const conceptFolder = conceptFolderOf as (file: string) => string | undefined;

/** Every concept folder of src/. */
function conceptFolders(): string[] {
  return [
    ...new Set(
      tsFiles(SRC)
        .map(conceptFolder)
        .filter((d) => d !== undefined),
    ),
  ].sort();
}

/** One name an import takes: `name` as the module exports it. */
interface Taken {
  name: string;
  typeOnly: boolean;
}

/** One import of a relative module (import, re-export, import(), import type, side-effect). */
interface Site {
  file: string;
  /** The specifier's string literal, quotes included. */
  start: number;
  end: number;
  specifier: string;
  target: string;
  form: 'import' | 'export' | 'export-all' | 'dynamic' | 'import-type' | 'side-effect';
  /** Every name it takes, or undefined when it takes the whole module (a namespace, export *, an unbound import()). */
  names: Taken[] | undefined;
  /** `import * as X` / `export * as X`: X. */
  namespace?: string;
  /** `import type` / `export type` (the whole statement). */
  typeOnly: boolean;
  /** The statement, for merging imports of one face. */
  statement?: ts.ImportDeclaration;
}

function parse(file: string): ts.SourceFile {
  return ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
}

/** The relative imports of one file. */
export function sitesOf(file: string, sf: ts.SourceFile = parse(file)): Site[] {
  const out: Site[] = [];
  const add = (lit: ts.Node, rest: Omit<Site, 'file' | 'start' | 'end' | 'specifier' | 'target'>): void => {
    if (!ts.isStringLiteralLike(lit) || !/^\.\.?\//.test(lit.text)) return;
    out.push({
      file,
      start: lit.getStart(sf),
      end: lit.getEnd(),
      specifier: lit.text,
      target: path.resolve(path.dirname(file), lit.text),
      ...rest,
    });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isImportDeclaration(node)) {
      const clause = node.importClause;
      const typeOnly = clause?.isTypeOnly ?? false;
      if (clause === undefined) add(node.moduleSpecifier, { form: 'side-effect', names: [], typeOnly: false });
      else {
        const names: Taken[] = [];
        if (clause.name !== undefined) names.push({ name: 'default', typeOnly });
        const b = clause.namedBindings;
        if (b !== undefined && ts.isNamespaceImport(b))
          add(node.moduleSpecifier, { form: 'import', names: undefined, namespace: b.name.text, typeOnly, statement: node });
        else {
          for (const e of b?.elements ?? []) names.push({ name: (e.propertyName ?? e.name).text, typeOnly: typeOnly || e.isTypeOnly });
          add(node.moduleSpecifier, { form: 'import', names, typeOnly, statement: node });
        }
      }
    } else if (ts.isExportDeclaration(node) && node.moduleSpecifier !== undefined) {
      const c = node.exportClause;
      if (c === undefined) add(node.moduleSpecifier, { form: 'export-all', names: undefined, typeOnly: node.isTypeOnly });
      else if (ts.isNamespaceExport(c))
        add(node.moduleSpecifier, { form: 'export-all', names: undefined, namespace: c.name.text, typeOnly: node.isTypeOnly });
      else
        add(node.moduleSpecifier, {
          form: 'export',
          names: c.elements.map((e) => ({ name: (e.propertyName ?? e.name).text, typeOnly: node.isTypeOnly || e.isTypeOnly })),
          typeOnly: node.isTypeOnly,
        });
    } else if (ts.isImportTypeNode(node) && ts.isLiteralTypeNode(node.argument)) {
      const q = node.qualifier;
      let first: ts.EntityName | undefined = q;
      while (first !== undefined && ts.isQualifiedName(first)) first = first.left;
      add(node.argument.literal, {
        form: 'import-type',
        names: first === undefined ? undefined : [{ name: first.text, typeOnly: true }],
        typeOnly: true,
      });
    } else if (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword && node.arguments[0] !== undefined) {
      // `const { a, b } = await import('./x.ts')` takes a and b; any other use takes the module.
      let names: Taken[] | undefined;
      const parent = ts.isAwaitExpression(node.parent) ? node.parent.parent : undefined;
      if (parent !== undefined && ts.isVariableDeclaration(parent) && ts.isObjectBindingPattern(parent.name))
        names = parent.name.elements.map((e) => ({
          name: ((e.propertyName as ts.Identifier | undefined) ?? (e.name as ts.Identifier)).text,
          typeOnly: false,
        }));
      add(node.arguments[0], { form: 'dynamic', names, typeOnly: false });
    }
    ts.forEachChild(node, visit);
  };
  visit(sf);
  return out;
}

/** What a module exports by name: where each name is declared (following re-exports inside its folder), and whether it is a type only. */
interface Origin {
  file: string;
  name: string;
  typeOnly: boolean;
}

const exportCache = new Map<string, Map<string, Origin>>();

/** The names `file` exports, each with its origin (a re-export from a file of the same folder is followed). */
export function exportsOf(file: string): Map<string, Origin> {
  const cached = exportCache.get(file);
  if (cached !== undefined) return cached;
  const out = new Map<string, Origin>();
  exportCache.set(file, out);
  if (!fs.existsSync(file)) return out;
  const sf = parse(file);
  const own = (name: string, typeOnly: boolean): void => void out.set(name, { file, name, typeOnly });
  const isExported = (n: ts.Node): boolean =>
    ts.canHaveModifiers(n) && (ts.getModifiers(n) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  const local = new Map<string, boolean>(); // declared names: typeOnly
  for (const st of sf.statements) {
    if (ts.isInterfaceDeclaration(st) || ts.isTypeAliasDeclaration(st)) local.set(st.name.text, true);
    else if (ts.isClassDeclaration(st) || ts.isFunctionDeclaration(st) || ts.isEnumDeclaration(st)) {
      if (st.name !== undefined) local.set(st.name.text, false);
    } else if (ts.isVariableStatement(st)) {
      for (const d of st.declarationList.declarations) if (ts.isIdentifier(d.name)) local.set(d.name.text, false);
    } else if (ts.isImportDeclaration(st) && st.importClause !== undefined) {
      const c = st.importClause;
      const b = c.namedBindings;
      if (b !== undefined && ts.isNamedImports(b)) for (const e of b.elements) local.set(e.name.text, c.isTypeOnly || e.isTypeOnly);
    }
  }
  for (const st of sf.statements) {
    if (isExported(st)) {
      const isDefault = (ts.getModifiers(st as ts.HasModifiers) ?? []).some((m) => m.kind === ts.SyntaxKind.DefaultKeyword);
      if (ts.isVariableStatement(st)) {
        for (const d of st.declarationList.declarations) if (ts.isIdentifier(d.name)) own(d.name.text, false);
      } else if (isDefault) own('default', false);
      else if ((ts.isInterfaceDeclaration(st) || ts.isTypeAliasDeclaration(st)) && st.name !== undefined) own(st.name.text, true);
      else if ((ts.isClassDeclaration(st) || ts.isFunctionDeclaration(st) || ts.isEnumDeclaration(st)) && st.name !== undefined)
        own(st.name.text, false);
      else if (ts.isModuleDeclaration(st) && ts.isIdentifier(st.name)) own(st.name.text, false);
    } else if (ts.isExportDeclaration(st) && st.exportClause !== undefined && ts.isNamedExports(st.exportClause)) {
      for (const e of st.exportClause.elements) {
        const name = e.name.text;
        const from = (e.propertyName ?? e.name).text;
        const typeOnly = st.isTypeOnly || e.isTypeOnly;
        if (st.moduleSpecifier !== undefined && ts.isStringLiteral(st.moduleSpecifier) && /^\.\.?\//.test(st.moduleSpecifier.text)) {
          const target = path.resolve(path.dirname(file), st.moduleSpecifier.text);
          const origin = exportsOf(target).get(from);
          out.set(
            name,
            origin === undefined ? { file: target, name: from, typeOnly } : { ...origin, typeOnly: typeOnly || origin.typeOnly },
          );
        } else if (st.moduleSpecifier === undefined) own(name, typeOnly || (local.get(from) ?? false));
      }
    } else if (ts.isExportDeclaration(st) && st.exportClause !== undefined && ts.isNamespaceExport(st.exportClause)) {
      own(st.exportClause.name.text, false);
    } else if (ts.isExportDeclaration(st) && st.exportClause === undefined && st.moduleSpecifier !== undefined) {
      const target = path.resolve(path.dirname(file), (st.moduleSpecifier as ts.StringLiteral).text);
      for (const [n, o] of exportsOf(target)) if (n !== 'default') out.set(n, { ...o, typeOnly: st.isTypeOnly || o.typeOnly });
    } else if (ts.isExportAssignment(st)) own('default', false);
  }
  return out;
}

/** A namespace import of a whole file through its face: `json-schemas.ts` -> `jsonSchemas`. */
export function namespaceName(file: string): string {
  return path.basename(file, '.ts').replace(/[-.]([a-z0-9])/g, (_, c: string) => c.toUpperCase());
}

interface Scan {
  sites: Site[];
  /** Sources parsed, by file. */
  files: Map<string, ts.SourceFile>;
}

function scan(dirs: string[]): Scan {
  const files = new Map<string, ts.SourceFile>();
  const sites: Site[] = [];
  for (const d of dirs)
    for (const f of tsFiles(path.join(ROOT, d))) {
      const sf = parse(f);
      files.set(f, sf);
      sites.push(...sitesOf(f, sf));
    }
  return { sites, files };
}

/** The import graph of the concept folders of src/ (faces and all), and its strongly connected sets of two or more. */
export function folderGraph(): { edges: Map<string, Map<string, string[]>>; cycles: string[][] } {
  const { sites } = scan(['src']);
  const edges = new Map<string, Map<string, string[]>>();
  for (const s of sites) {
    const from = conceptFolder(s.file) ?? SRC;
    const to = conceptFolder(s.target);
    if (to === undefined || to === from || !fs.existsSync(s.target)) continue;
    const m = edges.get(from) ?? new Map<string, string[]>();
    edges.set(from, m);
    const list = m.get(to) ?? [];
    m.set(to, list);
    list.push(`${rel(s.file)} -> ${rel(s.target)}`);
  }
  return { edges, cycles: stronglyConnected(edges) };
}

function stronglyConnected(edges: Map<string, Map<string, unknown>>): string[][] {
  let next = 0;
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next++);
    stack.push(v);
    on.add(v);
    for (const w of edges.get(v)?.keys() ?? []) {
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) !== index.get(v)) return;
    const scc: string[] = [];
    let w: string;
    do {
      w = stack.pop()!;
      on.delete(w);
      scc.push(w);
    } while (w !== v);
    if (scc.length > 1) out.push(scc.map(rel).sort());
  };
  for (const v of edges.keys()) if (!index.has(v)) visit(v);
  return out;
}

/** One name a face offers: `name` as `file` (a file of the folder) exports it. */
interface Offer {
  file: string;
  name: string;
  /** A whole file, as `export * as name`. */
  namespace: boolean;
  typeOnly: boolean;
  /** Imported by a file of src/ (else only by tests and the tools). */
  bySrc: boolean;
}

interface Plan {
  /** The face's new text, by face path (entries are not written). */
  faces: Map<string, string>;
  /** The new text of rewritten files. */
  rewritten: Map<string, string>;
  problems: string[];
}

const within = (file: string, folder: string): boolean => conceptFolder(file) === folder;

type Hop = { target: string; name: string; namespace: boolean };

/** Where `file` re-exports `name` from, one step (`export { name } from`, `export * as name from`, `export * from`); undefined when `file` declares it. */
function hopOf(file: string, name: string): Hop | undefined {
  const sf = parse(file);
  for (const st of sf.statements) {
    if (!ts.isExportDeclaration(st) || st.moduleSpecifier === undefined || !ts.isStringLiteral(st.moduleSpecifier)) continue;
    if (!/^\.\.?\//.test(st.moduleSpecifier.text)) continue;
    const target = path.resolve(path.dirname(file), st.moduleSpecifier.text);
    const c = st.exportClause;
    if (c === undefined) {
      if (exportsOf(target).has(name)) return { target, name, namespace: false };
    } else if (ts.isNamespaceExport(c)) {
      if (c.name.text === name) return { target, name, namespace: true };
    } else for (const e of c.elements) if (e.name.text === name) return { target, name: (e.propertyName ?? e.name).text, namespace: false };
  }
  return undefined;
}

/**
 * The file of `folder` that offers `name` of `file`'s exports, following
 * re-exports while they stay in the folder under the same name (a face
 * offers a name from the file that declares it, or from the file of its
 * folder that brings it from another folder).
 */
function offerOf(file: string, name: string, folder: string): { file: string; namespace: boolean; typeOnly: boolean } | undefined {
  const e = exportsOf(file).get(name);
  if (e === undefined) return undefined;
  let cur = file;
  for (;;) {
    const hop = hopOf(cur, name);
    if (hop !== undefined && !fs.existsSync(hop.target)) return undefined; // a re-export of a file moved away
    if (hop === undefined || hop.name !== name || !within(hop.target, folder)) break;
    if (hop.namespace) return { file: hop.target, namespace: true, typeOnly: false };
    cur = hop.target;
  }
  return { file: cur, namespace: false, typeOnly: e.typeOnly };
}

/**
 * An import of a file of src/ that is not there (a merge brought an import
 * of a file that moved to another folder), found again by the names it
 * takes: the face of the one folder that offers them all, or the file of the
 * importer's own folder that does. Else the import as it was.
 */
function relocated(s: Site): Site {
  if (fs.existsSync(s.target) || !s.target.startsWith(SRC + path.sep) || s.names === undefined || s.names.length === 0) return s;
  const folders = conceptFolders();
  const homes = new Set<string>();
  const files = new Set<string>();
  for (const t of s.names) {
    const offers = folders.flatMap((f) => {
      const o = findInFolder(f, t.name, []);
      return o === undefined ? [] : [{ folder: f, file: o.file }];
    });
    if (offers.length !== 1) return s;
    homes.add(offers[0]!.folder);
    files.add(offers[0]!.file);
  }
  const [home] = homes;
  if (homes.size !== 1 || home === undefined) return s;
  if (home !== conceptFolder(s.file)) return { ...s, target: path.join(home, FACE) };
  const [file] = files;
  return files.size === 1 && file !== undefined ? { ...s, target: file } : s;
}

/** The file of `folder` (its face aside) that offers `name`, for a face that does not yet (a new name, a file moved inside the folder). */
function findInFolder(folder: string, name: string, problems: string[]): ReturnType<typeof offerOf> {
  const found = new Map<string, NonNullable<ReturnType<typeof offerOf>>>();
  for (const f of tsFiles(folder)) {
    if (conceptFolder(f) !== folder || f === path.join(folder, FACE)) continue;
    if (namespaceName(f) === name && !exportsOf(f).has(name)) found.set(f, { file: f, namespace: true, typeOnly: false });
    if (!exportsOf(f).has(name)) continue;
    const o = offerOf(f, name, folder);
    if (o !== undefined) found.set(o.file, o);
  }
  if (found.size > 1) problems.push(`${rel(folder)}: ${name} is exported by ${[...found.keys()].map(rel).join(' and ')}: rename one`);
  return found.size === 1 ? [...found.values()][0] : undefined;
}

function specifierFrom(file: string, target: string): string {
  const r = path.relative(path.dirname(file), target).split(path.sep).join('/');
  return r.startsWith('.') ? r : `./${r}`;
}

const TESTS_ONLY = '// Not imported by other folders of src/: for the tests (and bench/, scripts/), which import the folder only here.\n';

/** The leading comments of a face, kept when it is written again. */
function header(face: string, folder: string): string {
  const fallback = `// The face of src/${path.relative(SRC, folder).split(path.sep).join('/')}/: what other folders and the tests import of it (docs/architecture.md, "Faces").\n// Written by scripts/apply-faces.ts from their imports; the comments above the exports are kept.\n`;
  if (!fs.existsSync(face)) return fallback;
  const text = fs.readFileSync(face, 'utf8');
  const sf = ts.createSourceFile(face, text, ts.ScriptTarget.ES2022, true);
  const first = sf.statements[0];
  const head = (first === undefined ? text : text.slice(0, first.getStart(sf))).split(TESTS_ONLY).join('').trimEnd();
  return head === '' ? fallback : head + '\n';
}

function faceText(face: string, folder: string, offers: Offer[]): string {
  const block = (list: Offer[]): string => {
    const byFile = new Map<string, Offer[]>();
    for (const o of list) byFile.set(o.file, [...(byFile.get(o.file) ?? []), o]);
    const lines: string[] = [];
    for (const file of [...byFile.keys()].sort()) {
      const spec = specifierFrom(face, file);
      const os = byFile.get(file)!;
      const values = os
        .filter((o) => !o.typeOnly && !o.namespace)
        .map((o) => o.name)
        .sort();
      const types = os
        .filter((o) => o.typeOnly && !o.namespace)
        .map((o) => o.name)
        .sort();
      for (const o of os.filter((o) => o.namespace)) lines.push(`export * as ${o.name} from '${spec}';`);
      if (values.length > 0) lines.push(`export { ${values.join(', ')} } from '${spec}';`);
      if (types.length > 0) lines.push(`export type { ${types.join(', ')} } from '${spec}';`);
    }
    return lines.join('\n') + (lines.length > 0 ? '\n' : '');
  };
  const main = offers.filter((o) => o.bySrc);
  const rest = offers.filter((o) => !o.bySrc);
  let out = header(face, folder) + '\n' + block(main);
  if (rest.length > 0) out += (main.length > 0 ? '\n' : '') + TESTS_ONLY + block(rest);
  if (offers.length === 0) out += 'export {};\n';
  return out;
}

/** What the tree would become: each face written from its users, each deep import of src/ and test/ rewritten to a face. */
export function plan(): Plan {
  const problems: string[] = [];
  const rewritable = scan(REWRITTEN);
  const readOnly = scan(READ_ONLY);
  const folders = conceptFolders();
  const offers = new Map<string, Map<string, Offer>>(folders.map((f) => [f, new Map()]));
  /** Per site to rewrite: the names it takes mapped to a face's names (a namespace to its name). */
  const edits: Array<{ site: Site; face: string; namespaceAs?: string }> = [];

  const offer = (folder: string, o: Omit<Offer, 'bySrc'>, bySrc: boolean): void => {
    const m = offers.get(folder)!;
    const key = `${o.namespace ? '*' : ''}${o.name}`;
    const had = m.get(key);
    if (had !== undefined && had.file !== o.file)
      problems.push(`${rel(path.join(folder, FACE))}: ${o.name} is exported by ${rel(had.file)} and ${rel(o.file)}: rename one`);
    m.set(key, { ...o, typeOnly: (had?.typeOnly ?? true) && o.typeOnly, bySrc: bySrc || (had?.bySrc ?? false) });
  };

  for (const [sites, mayRewrite] of [
    [rewritable.sites, true],
    [readOnly.sites, false],
  ] as const) {
    for (const found of sites) {
      const s = mayRewrite ? relocated(found) : found;
      const moved = s !== found;
      const folder = conceptFolder(s.target);
      if (folder === undefined || conceptFolder(s.file) === folder) {
        if (moved) edits.push({ site: s, face: s.target });
        continue;
      }
      if (!fs.existsSync(s.target)) {
        problems.push(`${rel(s.file)}: imports ${s.specifier}, which does not exist`);
        continue;
      }
      const face = path.join(folder, FACE);
      const deep = s.target !== face;
      if (deep && !mayRewrite) continue; // bench/ and scripts/ may reach any module
      const bySrc = s.file.startsWith(SRC + path.sep);
      const where = `${rel(s.file)}: ${s.specifier}`;
      if (s.namespace !== undefined && s.form === 'import') {
        if (!deep) continue;
        offer(folder, { file: s.target, name: namespaceName(s.target), namespace: true, typeOnly: s.typeOnly }, bySrc);
        edits.push({ site: s, face, namespaceAs: s.namespace });
        continue;
      }
      if (s.names === undefined) {
        if (!deep && ENTRY_FACES.has(face)) continue; // an entry offers what it offers
        problems.push(`${where}: takes the whole module (export *, or import() not destructured): name what it takes`);
        continue;
      }
      for (const t of s.names) {
        if (t.name === 'default') {
          problems.push(`${where}: a default import; a face offers names`);
          continue;
        }
        if (!deep && ENTRY_FACES.has(face)) {
          if (!exportsOf(face).has(t.name)) problems.push(`${where}: ${t.name} is not exported by ${rel(face)}, an entry of the package`);
          continue;
        }
        const o = offerOf(s.target, t.name, folder) ?? (deep ? undefined : findInFolder(folder, t.name, problems));
        if (o === undefined) {
          if (deep) problems.push(`${where}: ${t.name} is not exported`);
          else if (!ENTRY_FACES.has(face)) problems.push(`${where}: ${t.name} is not exported by the face (nor found in its folder)`);
          continue;
        }
        if (o.file === face) {
          problems.push(`${where}: ${t.name} is declared in the face itself; a face only re-exports`);
          continue;
        }
        offer(folder, { file: o.file, name: t.name, namespace: o.namespace, typeOnly: o.typeOnly }, bySrc);
      }
      if (deep || moved) {
        if (s.form === 'side-effect') problems.push(`${where}: a side-effect import past a face`);
        else edits.push({ site: s, face });
      }
    }
  }

  // Faces.
  const faces = new Map<string, string>();
  for (const folder of folders) {
    const face = path.join(folder, FACE);
    const list = [...offers.get(folder)!.values()];
    if (ENTRY_FACES.has(face)) {
      const has = exportsOf(face);
      for (const o of list)
        if (!has.has(o.name))
          problems.push(`${rel(face)} is an entry of the package: export ${o.name} (${rel(o.file)}) from it, or import it otherwise`);
      continue;
    }
    // Names the face offers now and a file of its folder still exports stay when nothing imports them? No: a face is what is imported.
    faces.set(face, faceText(face, folder, list));
  }

  // Rewrites.
  const byFile = new Map<string, typeof edits>();
  for (const e of edits) byFile.set(e.site.file, [...(byFile.get(e.site.file) ?? []), e]);
  const rewritten = new Map<string, string>();
  for (const [file, list] of byFile) {
    let text = fs.readFileSync(file, 'utf8');
    for (const e of list.sort((a, b) => b.site.start - a.site.start)) {
      const spec = `'${specifierFrom(file, e.face)}'`;
      if (e.namespaceAs !== undefined) {
        const st = e.site.statement!;
        const sf = rewritable.files.get(file)!;
        const ns = namespaceName(e.site.target);
        const binding = ns === e.namespaceAs ? ns : `${ns} as ${e.namespaceAs}`;
        text =
          text.slice(0, st.getStart(sf)) + `import ${e.site.typeOnly ? 'type ' : ''}{ ${binding} } from ${spec};` + text.slice(st.getEnd());
      } else text = text.slice(0, e.site.start) + spec + text.slice(e.site.end);
    }
    rewritten.set(file, mergeImports(file, text));
  }
  return { faces, rewritten, problems };
}

/** Import declarations of one face (of the same kind: `import type` or not, named bindings only) merged into the first. */
function mergeImports(file: string, text: string): string {
  const sf = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  const groups = new Map<string, ts.ImportDeclaration[]>();
  for (const st of sf.statements) {
    if (!ts.isImportDeclaration(st) || !ts.isStringLiteral(st.moduleSpecifier) || !st.moduleSpecifier.text.endsWith(`/${FACE}`)) continue;
    const c = st.importClause;
    if (c === undefined || c.name !== undefined || c.namedBindings === undefined || !ts.isNamedImports(c.namedBindings)) continue;
    const key = `${c.isTypeOnly ? 'type ' : ''}${path.resolve(path.dirname(file), st.moduleSpecifier.text)}`;
    groups.set(key, [...(groups.get(key) ?? []), st]);
  }
  const cuts: Array<{ start: number; end: number; text: string }> = [];
  for (const list of groups.values()) {
    if (list.length < 2) continue;
    const seen = new Set<string>();
    const elements: string[] = [];
    for (const st of list)
      for (const e of (st.importClause!.namedBindings as ts.NamedImports).elements) {
        const t = e.getText(sf);
        if (!seen.has(t)) elements.push(t);
        seen.add(t);
      }
    const [first, ...rest] = list as [ts.ImportDeclaration, ...ts.ImportDeclaration[]];
    const c = first.importClause!;
    cuts.push({
      start: first.getStart(sf),
      end: first.getEnd(),
      text: `import ${c.isTypeOnly ? 'type ' : ''}{ ${elements.join(', ')} } from ${first.moduleSpecifier.getText(sf)};`,
    });
    for (const st of rest) {
      let end = st.getEnd();
      if (text[end] === '\n') end++;
      cuts.push({ start: st.getStart(sf), end, text: '' });
    }
  }
  for (const c of cuts.sort((a, b) => b.start - a.start)) text = text.slice(0, c.start) + c.text + text.slice(c.end);
  return text;
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === path.resolve(import.meta.filename ?? '')) {
  const args = process.argv.slice(2);
  if (args.includes('--graph')) {
    const { edges, cycles } = folderGraph();
    for (const [from, m] of [...edges].sort())
      for (const [to, why] of [...m].sort()) console.log(`${rel(from)} -> ${rel(to)}  (${why.length})`);
    console.log(cycles.length === 0 ? 'no folder circles' : 'folder circles:');
    for (const c of cycles) {
      console.log('  ' + c.join(' <-> '));
      const inside = new Set(c.map((d) => path.join(ROOT, d)));
      for (const from of inside)
        for (const [to, why] of edges.get(from) ?? []) if (inside.has(to)) for (const w of why) console.log(`      ${w}`);
    }
    process.exitCode = cycles.length === 0 ? 0 : 1;
  } else {
    const check = args.includes('--check');
    const { faces, rewritten, problems } = plan();
    const prettier = await import('prettier');
    const changed: string[] = [];
    for (const [file, raw] of [...faces, ...rewritten]) {
      const options = { ...((await prettier.resolveConfig(file)) ?? {}), filepath: file };
      const text = await prettier.format(raw, options);
      if (fs.existsSync(file) && fs.readFileSync(file, 'utf8') === text) continue;
      changed.push(rel(file));
      if (!check) fs.writeFileSync(file, text);
    }
    for (const p of problems) console.error(p);
    for (const c of changed.sort()) console.log(`${check ? 'would write' : 'wrote'} ${c}`);
    console.log(`${changed.length} files ${check ? 'to write' : 'written'}, ${problems.length} problems`);
    process.exitCode = problems.length > 0 || (check && changed.length > 0) ? 1 : 0;
  }
}
