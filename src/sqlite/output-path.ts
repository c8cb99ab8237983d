import fs from 'node:fs';
import path from 'node:path';
import { InvalidInputError, errorCode } from '../errors.ts';
import { shellWord } from './shell-word.ts';

/*
 * The one check of a path the user names for sluice to write (init's and
 * strip's --out, a JSONL export, a new target database; a segment export's
 * or the demo's folder), run before any work: the path given wrong printed
 * Node's bare "EISDIR"/"ENOTDIR" (or wrote somewhere else: SQLite makes
 * "newdir" of "newdir/") after the work was done.
 */

export interface OutputPath {
  /** What the path is, as the user gave it: '--out', '--dir', 'target'. */
  readonly given: string;
  /** The command that writes it ("init"), where one is known. */
  readonly command?: string;
  /** 'file' (default): a file, written in a folder that exists. 'folder': a folder made with its parents. */
  readonly kind?: 'file' | 'folder';
  /** A file name to suggest inside a folder named by mistake ("sluice.yml"). */
  readonly example?: string;
}

/**
 * Refuses, before anything is written, a path `out` cannot be written at:
 * a file path that ends in "/" (BAD_PATH: it names a folder), one whose
 * folder does not exist (OUTPUT_FOLDER_MISSING: no folder is made, as a
 * mistyped path would leave a tree of them), and any path through a file
 * ("notes.txt/x.db": OUTPUT_FOLDER_MISSING, naming the file).
 *
 * @example
 * requireOutputPath('conf/', { given: '--out', command: 'init', example: 'sluice.yml' }); // BAD_PATH
 */
export function requireOutputPath(out: string, o: OutputPath): void {
  const who = o.command === undefined ? 'sluice' : `sluice ${o.command}`;
  const option = o.given.startsWith('-');
  if ((o.kind ?? 'file') === 'file' && (out.endsWith('/') || (path.sep === '\\' && out.endsWith('\\'))))
    throw new InvalidInputError(
      'BAD_PATH',
      `${o.given} ${out} ends in "${out.slice(-1)}", so it names a folder, and ${who} writes a file there. Pass the file's path, e.g. ${option ? `${o.given} ` : ''}${shellWord(path.join(out, o.example ?? 'file'))}.`,
    );
  // A link is written through: where it points is what must be writable (a link into a missing folder printed SQLite's or Node's bare error).
  const real = linkTarget(out);
  const named = real === out ? out : `${out} (a link to ${real})`;
  const folder = path.dirname(real);
  const found = nearestEntry(folder);
  if (found === undefined) return;
  if (!found.isFolder)
    throw new InvalidInputError(
      'OUTPUT_FOLDER_MISSING',
      `${o.given} ${named} goes through ${found.at}, which is a file, not a folder, so nothing can be made there. Pass a path in an existing folder (is ${found.at} mistyped?).`,
    );
  // A folder is made with its parents (a segment export's, the demo's); a file only in a folder that exists.
  if (found.at !== folder && (o.kind ?? 'file') === 'file')
    throw new InvalidInputError(
      'OUTPUT_FOLDER_MISSING',
      `the folder ${folder} of ${named} does not exist; ${who} makes no folder. Create it first (mkdir -p ${shellWord(folder)}) or pass ${option ? `${o.given} FILE` : `a ${o.given} path`} in an existing folder.`,
    );
}

/** Where `p` leads when it is a symbolic link (followed through a chain of them), else `p`. */
function linkTarget(p: string): string {
  let at = p;
  for (let hops = 0; hops < 40; hops++) {
    let to: string;
    try {
      if (!fs.lstatSync(at).isSymbolicLink()) return at;
      to = fs.readlinkSync(at);
    } catch {
      return at;
    }
    at = path.resolve(path.dirname(at), to);
  }
  return at;
}

/**
 * The nearest of `folder` and the folders above it that exists (a file
 * above a path fails its stat with ENOTDIR), and whether it is a folder;
 * undefined when one cannot be told (EACCES: the error of the write itself
 * says more).
 */
function nearestEntry(folder: string): { readonly at: string; readonly isFolder: boolean } | undefined {
  for (let p = folder; ; p = path.dirname(p)) {
    try {
      return { at: p, isFolder: fs.statSync(p).isDirectory() };
    } catch (err) {
      const code = errorCode(err);
      if ((code !== 'ENOENT' && code !== 'ENOTDIR') || path.dirname(p) === p) return undefined;
    }
  }
}

/**
 * Removes a database file this run made and its companions (-wal, -shm,
 * -journal): a new target that a refused open or import left empty. Only
 * for a file the caller made itself (it did not exist when it began).
 */
export function removeMadeDatabase(file: string): void {
  for (const suffix of ['', '-wal', '-shm', '-journal']) fs.rmSync(`${file}${suffix}`, { force: true });
}
