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
