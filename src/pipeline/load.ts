import fs from 'node:fs';
import path from 'node:path';
import type { z } from 'zod';
import { InvalidInputError } from '../errors.ts';
import {
  loadCustomModule,
  loadDefinitions,
  projectionDefinitionSchema,
  type LoadHandlerOptions,
  type ProjectionDefinition,
} from '../projection/index.ts';
import { splitServers } from '../broker/connection/index.ts';
import { fileKey, foldIdent } from '../sqlite/index.ts';
import { readPipelineDocument, type PipelineDocument } from './yaml-document.ts';
import { pipelineFileSchema, type natsSchema, type PipelineFile } from './schema.ts';
import type {
  HandlerFailure,
  NatsAuth,
  NatsConnection,
  NatsTls,
  Pipeline,
  PipelineSource,
  PipelineTarget,
  ProjectionEntry,
} from './pipeline.ts';

/*
 * Reads a pipeline file into a Pipeline: YAML (or JSON) parsed with its
 * lines, variables expanded, the schema checked, shorthands normalized,
 * paths made absolute against the file's folder, definition files read.
 * Everything a file can get wrong without looking at a database is refused
 * here, before anything is written, each with FILE:LINE:COL and the fix;
 * what needs the source (a table that does not exist) is checked by
 * checkPipelineSources.
 */

export interface LoadPipelineOptions {
  /**
   * 'record': a custom handler module that is there but fails to load is
   * recorded in its entry's `failed` (sluice run and health --config: that
   * target fails, the others run) instead of refusing the whole file.
   * Default 'refuse'.
   */
  readonly handlerFailures?: 'refuse' | 'record';
}

/** Reads and checks the pipeline file `file`; `env` expands ${VAR} (default process.env). */
export async function loadPipeline(
  file: string,
  env: NodeJS.ProcessEnv = process.env,
  options: LoadPipelineOptions = {},
): Promise<Pipeline> {
  const abs = path.resolve(file);
  let text: string;
  try {
    text = fs.readFileSync(abs, 'utf8');
  } catch (cause) {
    throw new InvalidInputError(
      'PIPELINE_INVALID',
      `Pipeline file ${file} cannot be read (${(cause as NodeJS.ErrnoException).code ?? 'error'}): write one (sluice init DB writes a commented one) or pass --config FILE.`,
      { cause },
    );
  }
  const doc = readPipelineDocument(file, text, env);
  const parsed = pipelineFileSchema.safeParse(doc.value ?? {});
  if (!parsed.success) throw schemaError(doc, parsed.error.issues);
  // An empty file is most often one being written (an editor truncates it first) or a template that failed: as a
  // pipeline it would stop every target and the status endpoints of a running `run`, and `health` would pass.
  if (parsed.data.sources === undefined && parsed.data.subscribe === undefined)
    throw new InvalidInputError(
      'PIPELINE_INVALID',
      `${doc.where([])}: the file declares nothing (neither "sources" nor "subscribe"). Declare what must exist (sluice init DB writes a commented file), or write "sources: []" to declare nothing on purpose.`,
    );
  return normalize(doc, parsed.data, path.dirname(abs), abs, options.handlerFailures === 'record');
}

function schemaError(doc: PipelineDocument, issues: readonly z.core.$ZodIssue[], prefix: readonly PropertyKey[] = []): InvalidInputError {
  // A misspelt key first: the key it should have been is then reported missing too.
  const issue = (issues.find((i) => i.code === 'unrecognized_keys') ?? issues[0]) as z.core.$ZodIssue;
  const at = [...prefix, ...issue.path];
  const name = at.length === 0 ? 'the file' : pathName(at);
  if (issue.code === 'unrecognized_keys') {
    const key = issue.keys[0] as string;
    return new InvalidInputError(
      'PIPELINE_INVALID',
      `${doc.where(at, key)}: ${name} has no key "${key}"${issue.keys.length > 1 ? ` (nor ${issue.keys.slice(1).join(', ')})` : ''}. Fix its spelling or remove it (docs/pipeline.md lists every key).`,
    );
  }
  const message = issue.code === 'invalid_key' ? issue.issues.map((x) => x.message).join(', ') : issue.message;
  return new InvalidInputError(
    'PIPELINE_INVALID',
    `${doc.where(at)}: ${name}: ${message}. Correct it (docs/pipeline.md shows the format).`,
  );
}

/** `sources[0].targets[1].path` */
function pathName(at: readonly PropertyKey[]): string {
  return at.map((p, i) => (typeof p === 'number' ? `[${p}]` : `${i === 0 ? '' : '.'}${String(p)}`)).join('');
}

async function normalize(doc: PipelineDocument, file: PipelineFile, dir: string, abs: string, record: boolean): Promise<Pipeline> {
  const resolve = (p: string) => path.resolve(dir, p);
  const seen = new Map<string, string>();
  // Keyed by the file: a symlink, a folder reached through one, or a hard link to a database declared already is that database.
  const claim = (p: string, at: readonly PropertyKey[], what: string) => {
    const key = fileKey(p);
    const earlier = seen.get(key);
    if (earlier !== undefined)
      throw new InvalidInputError(
        'PIPELINE_INVALID',
        `${doc.where(at)}: ${p} is declared again as ${what}; it is already ${earlier}. Declare each database once (one target can hold projections of one source only).`,
      );
    seen.set(key, `${what} at ${doc.where(at)}`);
  };

  const sources: PipelineSource[] = [];
  for (const [i, s] of (file.sources ?? []).entries()) {
    const at = ['sources', i];
    const sourcePath = resolve(s.path);
    claim(sourcePath, [...at, 'path'], 'a source');
    if (!fs.existsSync(sourcePath))
      throw new InvalidInputError(
        'PIPELINE_INVALID',
        `${doc.where([...at, 'path'])}: source ${s.path} does not exist (${sourcePath}; paths are relative to the pipeline file). Correct the path.`,
      );
    const capture = Array.isArray(s.capture)
      ? s.capture.map((table, k) => ({ table, mode: 'images' as const, declaredAt: doc.where([...at, 'capture', k]) }))
      : Object.entries(s.capture).map(([table, o]) => ({
          table,
          mode: typeof o === 'string' ? o : (o?.mode ?? 'images'),
          ...(typeof o === 'object' && o?.exclude !== undefined ? { exclude: o.exclude } : {}),
          ...(typeof o === 'object' && o?.include !== undefined ? { include: o.include } : {}),
          declaredAt: doc.where([...at, 'capture'], table),
        }));
    for (const c of capture) refuseIncludedExcluded(doc, [...at, 'capture', c.table], c);
    const captured = new Set(capture.map((c) => c.table.toLowerCase()));
    if (captured.size !== capture.length)
      throw new InvalidInputError('PIPELINE_INVALID', `${doc.where([...at, 'capture'])}: a table is listed twice. List each table once.`);
    const targets: PipelineTarget[] = [];
    for (const [j, t] of (s.targets ?? []).entries()) {
      const tAt = [...at, 'targets', j];
      const targetPath = resolve(t.path);
      claim(targetPath, [...tAt, 'path'], 'a target');
      const projections = await entries(doc, t.projections, [...tAt, 'projections'], dir, abs, captured, record);
      targets.push({ path: targetPath, declaredAt: doc.where(tAt), projections, health: t.health ?? {} });
    }
    const { formats, ...publishNats } = s.publish ?? {};
    const publish =
      s.publish === undefined ? undefined : natsConnection(doc, publishNats as z.infer<typeof natsSchema>, [...at, 'publish'], dir);
    sources.push({
      path: sourcePath,
      declaredAt: doc.where(at),
      capture,
      targets,
      ...(publish === undefined ? {} : { publish }),
      ...(formats === undefined ? {} : { publishFormats: [...new Set(formats)] }),
    });
  }

  const subscriptions = [];
  for (const [i, s] of (file.subscribe ?? []).entries()) {
    const at = ['subscribe', i];
    const targetPath = resolve(s.path);
    claim(targetPath, [...at, 'path'], 'a subscribed target');
    const projections = await entries(doc, s.projections ?? ['*'], [...at, 'projections'], dir, abs, undefined, record);
    const { format, ...natsPart } = s;
    const nats = natsConnection(doc, natsPart, at, dir);
    subscriptions.push({
      nats,
      format: format ?? 'jsonl',
      servers: nats.servers,
      sourceId: s.source,
      path: targetPath,
      declaredAt: doc.where(at),
      projections,
      health: s.health ?? {},
    });
  }
  return { file: abs, sources, subscriptions, listen: listenAddress(doc, file.listen), prune: file.prune ?? false };
}

/**
 * The projection entries of one target. `captured`: the tables its source
 * captures (lower case), which every definition must read from; undefined
 * for a subscribed target, whose source is on another machine.
 */
async function entries(
  doc: PipelineDocument,
  list: readonly (string | Record<string, unknown>)[],
  at: readonly PropertyKey[],
  dir: string,
  abs: string,
  captured: ReadonlySet<string> | undefined,
  record: boolean,
): Promise<ProjectionEntry[]> {
  const out: ProjectionEntry[] = [];
  let failed: HandlerFailure[] = [];
  const handlers: LoadHandlerOptions = record
    ? {
        onHandlerFailed: (d, err) =>
          failed.push({ projection: d.name, module: d.kind === 'custom' ? (d.module ?? '') : '', code: err.code, message: err.message }),
      }
    : {};
  /** The handler failures recorded since the last entry (its own). */
  const taken = (): { failed?: readonly HandlerFailure[] } => {
    const f = failed;
    failed = [];
    return f.length === 0 ? {} : { failed: f };
  };
  const names = new Map<string, string>();
  const add = (e: ProjectionEntry, where: readonly PropertyKey[]) => {
    for (const d of e.kind === 'all' ? [] : e.definitions) {
      const key = d.name.toLowerCase();
      const earlier = names.get(key);
      if (earlier !== undefined)
        throw new InvalidInputError(
          'PIPELINE_INVALID',
          `${doc.where(where)}: projection ${d.name} is declared twice in this target (also at ${earlier}). Give one of them another "name".`,
        );
      names.set(key, doc.where(where));
      if (captured !== undefined && !captured.has(d.source.toLowerCase()))
        throw new InvalidInputError(
          'PIPELINE_INVALID',
          `${doc.where(where)}: projection ${d.name} reads table ${d.source}, which this source does not capture. Add ${d.source} to its "capture" list.`,
        );
    }
    out.push(e);
  };
  for (const [k, entry] of list.entries()) {
    const where = [...at, k];
    if (entry === '*') {
      if (out.some((e) => e.kind === 'all'))
        throw new InvalidInputError('PIPELINE_INVALID', `${doc.where(where)}: "*" is listed twice. List it once.`);
      out.push({ kind: 'all', declaredAt: doc.where(where) });
    } else if (typeof entry === 'string') {
      const file = path.resolve(dir, entry);
      if (!fs.existsSync(file))
        throw new InvalidInputError(
          'PIPELINE_INVALID',
          `${doc.where(where)}: projection file ${entry} does not exist (${file}; paths are relative to the pipeline file). Correct the path, or write the definition there.`,
        );
      const definitions = await loadDefinitions(file, handlers);
      add({ kind: 'file', path: file, declaredAt: doc.where(where), definitions, ...taken() }, where);
    } else {
      const r = projectionDefinitionSchema.safeParse(entry);
      if (!r.success) throw schemaError(doc, r.error.issues, where);
      const d: ProjectionDefinition = r.data;
      if (d.kind === 'custom' && d.module === undefined)
        throw new InvalidInputError(
          'PIPELINE_INVALID',
          `${doc.where(where)}: custom projection ${d.name} needs "module", a file whose default export is its handler (relative to the pipeline file).`,
        );
      await loadCustomModule(d, abs, doc.file, handlers);
      add({ kind: 'inline', declaredAt: doc.where(where), definitions: [d], ...taken() }, where);
    }
  }
  return out;
}

/** A column a capture entry both leaves out (`exclude`) and captures (`include`): refused with the line of its `include` item. */
function refuseIncludedExcluded(
  doc: PipelineDocument,
  at: readonly PropertyKey[],
  c: { readonly table: string; readonly exclude?: readonly string[]; readonly include?: readonly string[] },
): void {
  const k = (c.include ?? []).findIndex((i) => (c.exclude ?? []).some((x) => foldIdent(x) === foldIdent(i)));
  if (k < 0) return;
  const column = c.include?.[k] as string;
  throw new InvalidInputError(
    'PIPELINE_INVALID',
    `${doc.where([...at, 'include', k])}: column ${column} of ${c.table} is both in "exclude" (left out of capture) and in "include" (captured). Keep it in one of them: exclude to leave it out, include to capture it.`,
  );
}

function listenAddress(doc: PipelineDocument, listen: string | number | undefined): Pipeline['listen'] {
  if (listen === undefined) return undefined;
  const text = String(listen);
  const m = /^(?:(.*):)?(\d{1,5})$/.exec(text);
  const port = m === null ? NaN : Number(m[2]);
  if (m === null || port > 65535)
    throw new InvalidInputError(
      'PIPELINE_INVALID',
      `${doc.where(['listen'])}: listen is "${text}", not HOST:PORT or a port. Write for example 127.0.0.1:9464.`,
    );
  const host = m[1] === undefined || m[1] === '' ? '127.0.0.1' : m[1].replace(/^\[(.*)\]$/, '$1');
  return { host, port };
}

/**
 * A `publish` or `subscribe[]` entry's connection: one way to log in at
 * most, a user with its password, a client certificate with its key, and
 * every file (creds, TLS) present, each refused with its line; file paths
 * made absolute against the pipeline file's folder.
 */
function natsConnection(doc: PipelineDocument, o: z.infer<typeof natsSchema>, at: readonly PropertyKey[], dir: string): NatsConnection {
  const refuse = (key: readonly PropertyKey[], what: string) =>
    new InvalidInputError('PIPELINE_INVALID', `${doc.where([...at, ...key])}: ${what}`);
  const ways = (['creds', 'user', 'token'] as const).filter((k) => o[k] !== undefined);
  if (ways.length > 1)
    throw refuse([ways[1] as string], `${ways.join(' and ')} are two ways to log in to NATS. Keep one (docs/pipeline.md).`);
  if (o.user !== undefined && o.password === undefined)
    throw refuse(['user'], 'user needs a password. Add password: ${NATS_PASSWORD} and set NATS_PASSWORD in the environment.');
  if (o.password !== undefined && o.user === undefined)
    throw refuse(['password'], 'password needs the user it belongs to. Add user: NAME.');
  if (o.tls !== undefined && (o.tls.cert === undefined) !== (o.tls.key === undefined))
    throw refuse(['tls'], 'a client certificate needs both cert and its key. Give both, or neither.');
  const file = (rel: string, key: readonly PropertyKey[], what: string) => {
    const abs = path.resolve(dir, rel);
    if (!fs.existsSync(abs))
      throw refuse(key, `${what} ${rel} does not exist (${abs}; paths are relative to the pipeline file). Correct the path.`);
    return abs;
  };
  const auth: NatsAuth | undefined =
    o.creds !== undefined
      ? { creds: file(o.creds, ['creds'], 'the credentials file') }
      : o.user !== undefined
        ? { user: o.user, password: o.password as string }
        : o.token !== undefined
          ? { token: o.token }
          : undefined;
  const tls: NatsTls | undefined =
    o.tls === undefined
      ? undefined
      : {
          ...(o.tls.ca === undefined ? {} : { ca: file(o.tls.ca, ['tls', 'ca'], 'the CA file') }),
          ...(o.tls.cert === undefined ? {} : { cert: file(o.tls.cert, ['tls', 'cert'], 'the client certificate') }),
          ...(o.tls.key === undefined ? {} : { key: file(o.tls.key, ['tls', 'key'], 'the client key') }),
        };
  return {
    servers: typeof o.nats === 'string' ? splitServers(o.nats) : o.nats,
    ...(auth === undefined ? {} : { auth }),
    ...(tls === undefined ? {} : { tls }),
  };
}
