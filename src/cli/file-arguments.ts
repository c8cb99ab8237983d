import type { Command } from 'commander';

/*
 * Which database each of a command's positional arguments is: for an error
 * SQLite raises without naming its file (a lock, a table of sluice's
 * dropped by hand, a file it may not write), the CLI names the file the
 * user gave (busy.ts, capture-damaged.ts, not-writable.ts). Read from the
 * arguments as each command declares them: their descriptions, which its
 * help prints, say "source SQLite database", "target SQLite database" or
 * "SQLite database" (any other argument is not a database: import's file,
 * a table, a projection's name).
 */

export type FileRole = 'source' | 'target' | 'database';

/** The role an argument described as `description` has, if it is a database. */
function roleOf(description: string): FileRole | undefined {
  if (description.startsWith('source SQLite database')) return 'source';
  if (description.startsWith('target SQLite database')) return 'target';
  if (description.startsWith('SQLite database')) return 'database';
  return undefined;
}

/** The databases `command` (the one the user ran, parsed) was given, with what each is. */
export function filesOf(command: Command): { readonly role: FileRole; readonly file: string }[] {
  return command.registeredArguments.flatMap((a, i) => {
    const role = roleOf(a.description);
    const file = command.args[i];
    return role === undefined || file === undefined ? [] : [{ role, file }];
  });
}
