import { createHash } from 'node:crypto';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { z } from 'zod';
import { InvalidInputError } from '../errors.ts';
import { shellWord } from '../sqlite/index.ts';
import type { ReasonCode } from '../reasons.ts';
import { defaultProjectionName, isProjectionName } from './name.ts';
import { DEFINITION_SCHEMAS } from './kinds/schemas.ts';
import type { mirrorDefinitionSchema } from './kinds/mirror/schema.ts';
import type { mapDefinitionSchema } from './kinds/map/schema.ts';
import type { fts5DefinitionSchema } from './kinds/fts5/schema.ts';
import type { customDefinitionSchema, CustomHandler } from './kinds/custom/schema.ts';

export type { CustomContext, CustomHandler } from './kinds/custom/schema.ts';
export { mirrorDefinitionSchema } from './kinds/mirror/schema.ts';
export { mapDefinitionSchema } from './kinds/map/schema.ts';
export { fts5DefinitionSchema } from './kinds/fts5/schema.ts';
export { customDefinitionSchema } from './kinds/custom/schema.ts';

/*
 * Projection definitions: validated by zod, written as JSON or as a TS module.
 * The definition (not the code) is what the fingerprint covers.
 */

export const projectionDefinitionSchema = z.discriminatedUnion('kind', DEFINITION_SCHEMAS);

export type ProjectionDefinition = z.infer<typeof projectionDefinitionSchema>;
/** What callers may write: defaults (such as fts5 `content`) may be left out. */
export type ProjectionDefinitionInput = z.input<typeof projectionDefinitionSchema>;
export type MirrorDefinition = z.infer<typeof mirrorDefinitionSchema>;
export type MapDefinition = z.infer<typeof mapDefinitionSchema>;
export type Fts5Definition = z.infer<typeof fts5DefinitionSchema>;
export type CustomDefinition = z.infer<typeof customDefinitionSchema>;

/** Validates one definition object; the error names the definition and the field. */
export function parseDefinition(input: unknown, origin = 'definition'): ProjectionDefinition {
  const r = projectionDefinitionSchema.safeParse(input);
  if (!r.success) {
    const label =
      typeof input === 'object' && input !== null && 'name' in input ? `projection ${String((input as { name: unknown }).name)}` : origin;
    // A record key's own rule (a map's target column name) is nested in an invalid_key issue.
    const message = (i: (typeof r.error.issues)[number]) =>
      i.code === 'invalid_key' ? i.issues.map((x) => x.message).join(', ') : i.message;
    const issues = r.error.issues.map((i) => `${i.path.length > 0 ? i.path.join('.') : '(root)'}: ${message(i)}`).join('; ');
    throw new InvalidInputError('BAD_DEFINITION', `Invalid ${label} (${origin}): ${issues}. See docs/projections.md for the format.`);
  }
  if (r.data.kind === 'custom' && r.data.module === undefined && r.data.handler === undefined && r.data.definedIn === undefined) {
    throw new InvalidInputError(
      'BAD_DEFINITION',
      `Invalid projection ${r.data.name} (${origin}): a custom projection needs "module" (a file exporting a handler) or "handler".`,
    );
  }
  return r.data;
}

/**
 * Loads definitions from a JSON file (one object or an array) or a TS/JS
 * module (default export: one definition or an array). Custom modules are
 * resolved relative to the definition file and loaded here.
 */
export async function loadDefinitions(file: string, options: LoadHandlerOptions = {}): Promise<ProjectionDefinition[]> {
  const abs = path.resolve(file);
  if (!fs.existsSync(abs))
    throw new InvalidInputError(
      'DEFINITION_NOT_FOUND',
      `Projection file ${file} does not exist. Pass a .json or .ts definition file (see projections/ for examples).`,
    );
  if (fs.statSync(abs).isDirectory()) throw folderGiven(file, abs);
  let raw: unknown;
  if (abs.endsWith('.json')) {
    try {
      raw = JSON.parse(fs.readFileSync(abs, 'utf8'));
    } catch (cause) {
      throw new InvalidInputError('BAD_DEFINITION', `Projection file ${file} is not valid JSON: ${(cause as Error).message}.`, { cause });
    }
  } else {
    const mod = await importHandler(abs, `Projection file ${file}`, 'BAD_DEFINITION');
    raw = mod.default;
  }
  const list = Array.isArray(raw) ? raw : [raw];
  const defs = list.map((d, i) => parseDefinition(d, `${file}${list.length > 1 ? `[${i}]` : ''}`));
  for (const d of defs) await loadCustomModule(d, abs, file, options);
  return defs;
}

/** A definition file's extensions: JSON, or a module (TS or JS). */
const DEFINITION_FILE = /\.(json|[cm]?[jt]s)$/;

/**
 * A folder given as a definition file (a folder of them, a common guess):
 * DEFINITION_NOT_FOUND naming the files in it to pass one by one, where
 * Node's import would say "Directory import ... is not supported",
 * naming sluice's own bundle.
 */
function folderGiven(file: string, abs: string): InvalidInputError {
  const files = fs
    .readdirSync(abs)
    .filter((f) => DEFINITION_FILE.test(f) && !f.endsWith('.d.ts'))
    .sort()
    .map((f) => path.join(file, f));
  const pass =
    files.length === 0
      ? 'it holds no .json, .ts or .js file'
      : `name each of its files: ${files
          .slice(0, 5)
          .map((f) => `--projection ${shellWord(f)}`)
          .join(' ')}${files.length > 5 ? ` (and ${files.length - 5} more)` : ''} (in a pipeline file, one entry each)`;
  return new InvalidInputError(
    'DEFINITION_NOT_FOUND',
    `Projection file ${file} is a folder; a projection is read from one definition file (.json, or a .ts/.js module whose default export is the definition or an array of them), and a folder is not read as a set of them. To use the definitions in it, ${pass}.`,
  );
}

export interface LoadHandlerOptions {
  /**
   * A custom handler module that is there but fails to load (it throws or
   * does not parse at import, or exports no handler): given here instead of
   * thrown, and the definition keeps its "module" (an absolute URL) and no
   * handler. `sluice run` records it as its target's failure, the others
   * running (a missing module is still refused).
   */
  readonly onHandlerFailed?: (d: ProjectionDefinition, err: InvalidInputError) => void;
}

/**
 * Loads the handler of custom definition `d` read from `abs` (shown as
 * `file`): its "module", resolved relative to that file's folder, or the
 * handler the file itself defines. Data-only kinds are left as they are.
 */
export async function loadCustomModule(
  d: ProjectionDefinition,
  abs: string,
  file: string,
  options: LoadHandlerOptions = {},
): Promise<void> {
  if (d.kind === 'custom' && d.handler !== undefined && !abs.endsWith('.json'))
    (d as { definedIn?: string }).definedIn = pathToFileURL(abs).href;
  if (d.kind === 'custom' && d.handler === undefined && d.module !== undefined) {
    const modPath = d.module.startsWith('file:') ? fileURLToPath(d.module) : path.resolve(path.dirname(abs), d.module);
    const inFile = `Projection ${d.name} in ${file}`;
    if (!fs.existsSync(modPath)) {
      const from =
        d.module.startsWith('file:') || path.isAbsolute(d.module)
          ? 'as an absolute path'
          : `relative to the definition file's folder ${path.dirname(abs)}`;
      throw new InvalidInputError(
        'CUSTOM_MODULE_NOT_FOUND',
        `${inFile}: its "module" "${d.module}" resolves to ${modPath} (${from}), and there is no file there. Correct "module" in ${file} (a path relative to that file's folder, an absolute path or a file: URL) or put the handler module there.`,
      );
    }
    const given = d.module;
    // Stored with the projection as an absolute URL, so later runs without --projection find it.
    (d as { module?: string }).module = pathToFileURL(modPath).href;
    let handler: CustomHandler | undefined;
    try {
      const mod = await importHandler(modPath, `${inFile}: its handler module ${modPath}`);
      handler = mod.default as CustomHandler | undefined;
      if (handler === undefined || typeof handler.apply !== 'function') {
        throw new InvalidInputError(
          'BAD_DEFINITION',
          `Projection ${d.name}: module ${given} must default-export an object with an apply(event, ctx) function.`,
        );
      }
    } catch (err) {
      if (options.onHandlerFailed === undefined || !(err instanceof InvalidInputError)) throw err;
      options.onHandlerFailed(d, err);
      return;
    }
    (d as { handler?: CustomHandler }).handler = handler;
  }
}

let tsLoader: Promise<void> | undefined;

/**
 * Each module file imported in this thread: its content's hash -> the URL it
 * was imported as (the first version under its own URL, each later one with
 * its hash as a query).
 */
const versions = new Map<string, Map<string, string>>();

/** Each module file imported: the files it required (CommonJS), as its last import left them in require.cache. */
const imports = new Map<string, string[]>();

/** The files module `file` imported (required) at its last import, outside node_modules: `sluice run` watches them too. */
export function moduleImports(file: string): readonly string[] {
  return imports.get(pathToFileURL(path.resolve(file)).href) ?? [];
}

/** The files `file` requires, and the files they require, outside node_modules (a package is not reloaded). */
function requiredFiles(file: string): string[] {
  const out = new Set<string>();
  const walk = (m: NodeJS.Module | undefined) => {
    for (const c of m?.children ?? []) {
      if (out.has(c.filename) || c.filename === file || c.filename.split(path.sep).includes('node_modules')) continue;
      out.add(c.filename);
      walk(c);
    }
  };
  walk(cjsRequire.cache[file]);
  return [...out].sort();
}

/** The content hash of a module file with the files it imports: any of them edited, another hash. */
function graphHash(files: readonly string[]): string {
  if (files.length === 1) return contentHash(files[0] as string);
  return createHash('sha256')
    .update(files.map((f) => `${f}\0${contentHash(f)}`).join('\n'))
    .digest('hex')
    .slice(0, 16);
}

function contentHash(file: string): string {
  try {
    return createHash('sha256').update(fs.readFileSync(file)).digest('hex').slice(0, 16);
  } catch {
    return 'missing';
  }
}

/**
 * Imports a definition or handler module. The compiled CLI runs on plain
 * Node 20, which cannot import a .ts file (ERR_UNKNOWN_FILE_EXTENSION, and
 * Node caches that failure, so a retry cannot help): register tsx's loader
 * (a runtime dependency) before the first such import. Running from the
 * sources (tsx, vitest) already imports .ts.
 */
async function importModule(url: string): Promise<{ default?: unknown }> {
  if (/\.[cm]?ts$/.test(new URL(url).pathname) && !import.meta.url.endsWith('.ts')) {
    // Both hooks: a .ts file outside a "type": "module" package is CommonJS to Node.
    tsLoader ??= Promise.all([import('tsx/esm/api'), import('tsx/cjs/api')]).then(([esm, cjs]) => {
      esm.register();
      cjs.register();
    });
    await tsLoader;
  }
  // Node keeps a module it imported (or failed to import) under its URL for the life of the thread: a file whose content
  // changed since, or one of the files it imports (as far as Node loaded them as CommonJS: a .ts or .js outside a
  // "type": "module" package), is imported under another URL, so a definition or handler edited while `sluice run` or
  // `sync --follow` runs takes effect. An unchanged file is the module imported before (a reload leaks nothing), and so is
  // a file put back as it was.
  const file = fileURLToPath(url);
  const graph = imports.get(url) ?? [];
  const hash = graphHash([file, ...graph]);
  let seen = versions.get(url);
  if (seen === undefined) versions.set(url, (seen = new Map()));
  let as = seen.get(hash);
  if (as === undefined) {
    as = seen.size === 0 ? url : `${url}?content=${hash}`;
    seen.set(hash, as);
    // A file Node loads as CommonJS (a .ts or .js outside a "type": "module" package, a .cjs) is kept in require.cache by
    // its path whatever URL imported it: forgotten there (with the files it required), the new URL reads them again.
    if (seen.size > 1) for (const f of [file, ...graph]) forgetCommonJs(f);
  }
  const mod = (await import(as)) as { default?: unknown };
  imports.set(url, requiredFiles(file));
  // Compiled as CommonJS, `export default x` arrives as module.exports.default.
  const d = mod.default as { __esModule?: unknown; default?: unknown } | undefined;
  return typeof d === 'object' && d !== null && d.__esModule === true && 'default' in d ? { default: d.default } : mod;
}

const cjsRequire = createRequire(import.meta.url);

function forgetCommonJs(file: string): void {
  delete cjsRequire.cache[file];
  try {
    delete cjsRequire.cache[fs.realpathSync(file)];
  } catch {
    // Gone: nothing of it to forget.
  }
}

/**
 * Imports a definition or handler module from a file that exists; a failure
 * to load it (a syntax error, a missing import of its own) is reported as
 * `what` failing, with the cause, not as an error of sluice's own code.
 */
async function importHandler(file: string, what: string, code: ReasonCode = 'CUSTOM_MODULE_FAILED'): Promise<{ default?: unknown }> {
  try {
    return await importModule(pathToFileURL(file).href);
  } catch (cause) {
    const message = (cause instanceof Error ? cause.message : String(cause)).split('\n')[0] ?? '';
    throw new InvalidInputError(
      code,
      `${what} failed to load: ${message.replace(/\.$/, '')}. Fix the module (or what it imports) and run again.`,
      { cause },
    );
  }
}

/** A stored handler's module (a file: URL) as a path, after checking that it is still there. */
function storedModuleFile(d: CustomDefinition, url: string): string {
  const file = fileURLToPath(url);
  if (!fs.existsSync(file)) {
    throw new InvalidInputError(
      'CUSTOM_MODULE_NOT_FOUND',
      `Projection ${d.name}: its handler module ${file}, recorded in the target when the projection was made, is no longer there. Pass its definition file again with --projection (its "module" is resolved from there), or put the module back.`,
    );
  }
  return file;
}

/** Loads the handler of a stored custom definition again (from its module or its definition file). */
/** A stored definition with its code loaded again: a custom projection's handler (the others are data only). */
export async function withStoredHandler(d: ProjectionDefinition): Promise<ProjectionDefinition> {
  return d.kind === 'custom' ? { ...d, handler: await loadStoredHandler(d) } : d;
}

/** Whether a definition is code that was not loaded: a custom projection without its handler. */
export function lacksHandler(d: ProjectionDefinition): boolean {
  return d.kind === 'custom' && d.handler === undefined;
}

async function loadStoredHandler(d: CustomDefinition): Promise<CustomHandler> {
  if (d.module !== undefined) {
    const mod = (await importHandler(storedModuleFile(d, d.module), `Projection ${d.name}: its handler module ${d.module}`)) as {
      default?: CustomHandler;
    };
    if (mod.default !== undefined && typeof mod.default.apply === 'function') return mod.default;
  } else if (d.definedIn !== undefined) {
    const mod = await importHandler(storedModuleFile(d, d.definedIn), `Projection ${d.name}: its definition file ${d.definedIn}`);
    const list = Array.isArray(mod.default) ? mod.default : [mod.default];
    const found = list.find((x) => typeof x === 'object' && x !== null && (x as { name?: unknown }).name === d.name) as
      { handler?: CustomHandler } | undefined;
    if (found?.handler !== undefined) return found.handler;
  }
  throw new InvalidInputError(
    'BAD_DEFINITION',
    `Projection ${d.name}: its handler cannot be loaded again from ${d.module ?? d.definedIn ?? '(nowhere)'}. Pass its definition file with --projection.`,
  );
}

/** A mirror of `table` under its default name (see name.ts): the default when no definition is given. */
export function defaultMirror(table: string): MirrorDefinition {
  return { name: defaultProjectionName(table), source: table, kind: 'mirror' };
}

/**
 * Reads back a definition stored in a target. Before default names were
 * escaped, the default mirror of a table was stored under the table's own
 * name, whatever it was (`_audit`, `my table`): exactly that definition is
 * taken as it was stored, so such targets keep working (same name, same
 * fingerprint, no rebuild). Anything else is checked like a new definition.
 * `handler`: a stand-in for a custom projection's code (its row keeps data only), to compile it without running it.
 */
export function parseStoredDefinition(json: string, origin: string, handler?: CustomHandler): ProjectionDefinition {
  const d = JSON.parse(json) as unknown;
  if (typeof d === 'object' && d !== null && !Array.isArray(d)) {
    const o = d as Record<string, unknown>;
    const keys = Object.keys(o).sort().join(',');
    if (
      keys === 'kind,name,source' &&
      o.kind === 'mirror' &&
      typeof o.name === 'string' &&
      o.name === o.source &&
      !isProjectionName(o.name)
    ) {
      return { name: o.name, source: o.name, kind: 'mirror' };
    }
  }
  const o = d as { kind?: unknown; handler?: unknown };
  return parseDefinition(handler !== undefined && o?.kind === 'custom' && o.handler === undefined ? { ...o, handler } : d, origin);
}
