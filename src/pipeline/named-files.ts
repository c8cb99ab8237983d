import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { readPipelineDocument } from './yaml-document.ts';

/*
 * The files a pipeline file names (definition files, custom handler
 * modules), read from its YAML alone, as far as it parses: for `sluice run`
 * to watch the files of a file it refused to load (one naming a definition
 * file that is not written yet, or broken), so that writing or fixing that
 * file reloads.
 */

/** The absolute paths of the definition files and handler modules `file` names; none when it cannot be read or parsed. */
export function namedFiles(file: string, env: NodeJS.ProcessEnv = process.env): string[] {
  const abs = path.resolve(file);
  let value: unknown;
  try {
    value = readPipelineDocument(file, fs.readFileSync(abs, 'utf8'), env).value;
  } catch {
    return []; // unreadable or no YAML: the pipeline file itself is watched
  }
  const dir = path.dirname(abs);
  const list = (o: unknown, key: string): unknown[] => {
    const v = typeof o === 'object' && o !== null ? (o as Record<string, unknown>)[key] : undefined;
    return Array.isArray(v) ? v : [];
  };
  const entries = [...list(value, 'sources').flatMap((s) => list(s, 'targets')), ...list(value, 'subscribe')].flatMap((t) =>
    list(t, 'projections'),
  );
  const files = entries.flatMap((e): string[] => {
    if (typeof e === 'string') return e === '*' ? [] : [e];
    const module = typeof e === 'object' && e !== null ? (e as { module?: unknown }).module : undefined;
    return typeof module === 'string' ? [module] : [];
  });
  return [...new Set(files.map((f) => (f.startsWith('file:') ? fileURLToPath(f) : path.resolve(dir, f))))];
}
