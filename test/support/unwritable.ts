import fs from 'node:fs';
import { spawnSync } from 'node:child_process';

const isRoot = process.getuid?.() === 0;

/**
 * Makes `p` unwritable for this user; returns how to undo it, or why it
 * cannot be done here. File modes do not stop root: as root the file or
 * folder is made immutable (chattr +i) instead.
 */
export function makeUnwritable(p: string): { undo: () => void } | { reason: string } {
  if (!isRoot) {
    const mode = fs.statSync(p).mode & 0o777;
    fs.chmodSync(p, fs.statSync(p).isDirectory() ? 0o555 : 0o444);
    return { undo: () => fs.chmodSync(p, mode) };
  }
  const r = spawnSync('chattr', ['+i', p], { encoding: 'utf8' });
  if (r.error !== undefined || r.status !== 0)
    return {
      reason: `running as root, where file modes do not stop writes, and chattr +i is not available here (${r.error?.message ?? r.stderr.trim()})`,
    };
  return { undo: () => spawnSync('chattr', ['-i', p]) };
}
