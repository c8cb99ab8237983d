import type { Command } from 'commander';

/*
 * Which database each command's positional arguments are: for an error
 * SQLite raises without naming its file (a lock, a table of sluice's
 * dropped by hand), the CLI names the file the user gave (busy.ts,
 * capture-damaged.ts).
 */

export type FileRole = 'source' | 'target' | 'database';

/** Each command's positional arguments in order (undefined: not a database, e.g. import's file). */
const FILE_ARGUMENTS: Readonly<Record<string, readonly (FileRole | undefined)[]>> = {
  init: ['database'],
  enable: ['source'],
  disable: ['source'],
  bump: ['source'],
  alter: ['source'],
  status: ['source'],
  changes: ['source'],
  prune: ['source'],
  sync: ['source', 'target'],
  verify: ['source', 'target'],
  explain: ['source', 'target'],
  export: ['source'],
  import: ['target'],
  publish: ['source'],
  subscribe: ['target'],
  health: ['target'],
  drop: ['target'],
  reinit: ['source', 'target'],
  protect: ['target'],
  forget: ['source'],
  query: ['database'],
  strip: ['database'],
};

/** The databases `command` (the one the user ran, parsed) was given, with what each is. */
export function filesOf(command: Command): { readonly role: FileRole; readonly file: string }[] {
  const roles = FILE_ARGUMENTS[command.name()] ?? [];
  return roles.flatMap((role, i) => {
    const file = command.args[i];
    return role === undefined || file === undefined ? [] : [{ role, file }];
  });
}
