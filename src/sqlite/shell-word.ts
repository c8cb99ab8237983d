import { COMMANDS, DEFAULT_REPAIR, fillRepair, REASONS, repairFor, type ReasonCode, type RepairVars } from '../reasons.ts';

/**
 * A command-line word as it must be typed in this platform's shell: as is
 * when it holds only plain path characters; else single-quoted for a POSIX
 * shell (nothing inside is expanded), double-quoted for Windows (cmd and
 * PowerShell take backslashes as they are). Every command a message names
 * (a repair, an enable) quotes its files and tables with it.
 */
export function shellWord(s: string, platform: NodeJS.Platform = process.platform): string {
  if (/^[\w@%+=:,./\\-]+$/.test(s) && (platform === 'win32' || !s.includes('\\'))) return s;
  if (platform === 'win32') return `"${s.replaceAll('"', '""')}"`;
  return `'${s.replaceAll("'", "'\\''")}'`;
}

/*
 * The catalog (src/reasons.ts) holds the wording of every repair and of the
 * commands messages name; here its placeholders get their values as they
 * are typed. Callers pass paths and names as they are: nothing else builds
 * command text.
 */

function quoted(values: RepairVars): RepairVars {
  const word = (s: string | undefined) => (s === undefined ? undefined : shellWord(s));
  return { source: word(values.source), target: word(values.target), projection: word(values.projection), table: word(values.table) };
}

/** Command `name` of the catalog (COMMANDS) with `values` quoted; a value left undefined is named in capitals and said in words (fillRepair). */
export function shellCommand(name: keyof typeof COMMANDS, values: RepairVars): string {
  return fillRepair(COMMANDS[name], quoted(values));
}

/** The repair the catalog gives `code` (the rebuild when it has none of its own), with `values` quoted; without the code before it, which repairAction says. */
export function repairOf(code: ReasonCode, values: RepairVars): string {
  return fillRepair(REASONS[code].repair ?? DEFAULT_REPAIR, quoted(values));
}

/**
 * What to do about a suspended projection, with the command that does it,
 * worded in src/reasons.ts. A path or table not known here (a projection
 * imported from a file records no source path) is named in words.
 */
export function repairAction(
  name: string,
  reason: string | null | undefined,
  sourcePath?: string,
  targetPath?: string,
  sourceTable?: string,
): string {
  return repairFor(reason, quoted({ source: sourcePath, target: targetPath, projection: name, table: sourceTable }));
}

/** The command that rebuilds projection `name` from a snapshot (sluice reinit), with the paths as they are typed; an unknown source said in words. */
export function reinitCommand(name: string, sourcePath: string | null | undefined, targetPath: string): string {
  return shellCommand('reinit', { source: sourcePath ?? undefined, target: targetPath, projection: name });
}
