import fs from 'node:fs';
import path from 'node:path';

/**
 * The real path of a database file, so that a symlink or another relative
 * path to one file names that file: its realpath when it exists; through a
 * symlink that does not resolve yet (its file not created), where the
 * symlink points; else its folder's realpath and its name (a file not made
 * yet); else the absolute path as given.
 *
 * @example realFilePath('link.db') // '/srv/data/real.db' when link.db -> data/real.db
 */
export function realFilePath(file: string): string {
  let p = path.resolve(file);
  // A chain of symlinks to a file not made yet (bounded: a loop ends as the path reached).
  for (let hops = 0; hops < 40; hops++) {
    try {
      return fs.realpathSync(p);
    } catch {
      let link: string;
      try {
        link = fs.readlinkSync(p);
      } catch {
        break;
      }
      p = path.resolve(path.dirname(p), link);
    }
  }
  try {
    return path.join(fs.realpathSync(path.dirname(p)), path.basename(p));
  } catch {
    return p;
  }
}

/**
 * Whether two paths name one file: the same real path (realFilePath), or,
 * both existing, the same device and inode (a hard link, which no path
 * comparison finds). A key for it: fileKey.
 */
export function sameDatabaseFile(a: string, b: string): boolean {
  return fileKey(a) === fileKey(b);
}

/**
 * A key that is equal for two paths exactly when they name one file
 * (sameDatabaseFile): the device and inode of an existing file, else its
 * real path (folded to lower case on Windows, whose paths ignore case).
 */
export function fileKey(file: string): string {
  const real = realFilePath(file);
  let st: fs.BigIntStats | undefined;
  try {
    st = fs.statSync(real, { bigint: true, throwIfNoEntry: false });
  } catch {
    st = undefined; // (a file in the path, ENOTDIR: no file there, which its own use reports)
  }
  if (st !== undefined && st.ino !== 0n) return `inode ${st.dev}:${st.ino}`;
  return `path ${process.platform === 'win32' ? real.toLowerCase() : real}`;
}
