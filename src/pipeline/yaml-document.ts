import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import type { Document, Node } from 'yaml';
import { InvalidInputError } from '../errors.ts';

/*
 * A pipeline file read as YAML (JSON is YAML too), with each value's line
 * and column kept, so that every refusal points at the line to fix.
 * Environment variables are expanded in values as Litestream does
 * (`${NATS_URL}`), except that an unset one is an error, never an empty
 * string: an empty URL or path would quietly mean something else. `$${`
 * writes a literal `${`. Keys are never expanded.
 */

export interface PipelineDocument {
  readonly file: string;
  /** The file's value, variables expanded. */
  readonly value: unknown;
  /** "FILE:LINE:COL" of the value at `path` (or of the nearest enclosing one that exists); `key` points at that key of a map instead. */
  where(path: readonly PropertyKey[], key?: string): string;
}

/** `$${`, or `${NAME}` (group 1), or a `${` with no closing brace (group 2: the rest of the value). */
const VARIABLE = /\$\$\{|\$\{([^}]*)\}|\$\{([^}]*)$/g;
const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/**
 * The YAML parser, loaded when a pipeline file is first read: through the
 * bundle's static imports it was parsed and run by every command's start
 * (about 240 KB), though only `run`, `plan`, `health --config` and `init`
 * read a pipeline file. The bundle does not follow a createRequire, so it
 * is loaded from node_modules, as prom-client is (pipeline/metrics.ts).
 */
let yamlModule: typeof Yaml | undefined;
const yaml = (): typeof Yaml => (yamlModule ??= createRequire(import.meta.url)('yaml') as typeof Yaml);

export function readPipelineDocument(file: string, text: string, env: NodeJS.ProcessEnv = process.env): PipelineDocument {
  const { LineCounter, parseDocument, visit } = yaml();
  const lines = new LineCounter();
  const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: true, prettyErrors: false });
  const at = (offset: number) => {
    const p = lines.linePos(offset);
    return `${file}:${p.line}:${p.col}`;
  };
  const syntax = doc.errors[0];
  if (syntax !== undefined)
    throw new InvalidInputError(
      'PIPELINE_INVALID',
      `${at(syntax.pos[0])}: not valid YAML: ${syntax.message.split('\n')[0]}. Fix the file (JSON is valid YAML too).`,
    );
  visit(doc, {
    Scalar(key, node) {
      if (key === 'key' || typeof node.value !== 'string' || !node.value.includes('$')) return;
      node.value = node.value.replace(VARIABLE, (whole: string, name: string | undefined, unclosed: string | undefined) => {
        if (unclosed !== undefined)
          throw new InvalidInputError(
            'PIPELINE_INVALID',
            `${at(node.range?.[0] ?? 0)}: ${whole} has no closing }. Write \${NAME} for a variable, or $\${ for a literal \${.`,
          );
        if (name === undefined) return '${';
        if (!NAME.test(name))
          throw new InvalidInputError(
            'PIPELINE_INVALID',
            `${at(node.range?.[0] ?? 0)}: ${whole} is not a variable name (letters, digits and _, not starting with a digit). Write $\${ for a literal \${.`,
          );
        const value = env[name];
        if (value === undefined)
          throw new InvalidInputError(
            'PIPELINE_ENV_UNSET',
            `${at(node.range?.[0] ?? 0)}: environment variable ${name} is not set, and sluice never reads an unset variable as an empty string. Set it (export ${name}=...) or write the value in the file.`,
          );
        return value;
      });
    },
  });
  return {
    file,
    value: doc.toJS({ maxAliasCount: 100 }) as unknown,
    where: (path, key) => at(offsetOf(doc, path, key)),
  };
}

/** The offset of the node at `path` in `doc`, or of its nearest existing ancestor; of the key `key` when it is a key of that map. */
function offsetOf(doc: Document, path: readonly PropertyKey[], key?: string): number {
  const { isMap, isScalar } = yaml();
  for (let n = path.length; n >= 0; n--) {
    const node = doc.getIn(path.slice(0, n) as unknown[], true) as Node | undefined;
    if (node === undefined || node === null) continue;
    if (key !== undefined && n === path.length && isMap(node)) {
      const pair = node.items.find((p) => isScalar(p.key) && String(p.key.value) === key);
      if (pair !== undefined && isScalar(pair.key)) return pair.key.range?.[0] ?? 0;
    }
    if (n === 0 && doc.contents !== null) return doc.contents.range?.[0] ?? 0;
    return node.range?.[0] ?? 0;
  }
  return 0;
}
