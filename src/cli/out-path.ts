import { InvalidArgumentError } from 'commander';

/**
 * `--out PATH` of export, strip and init, demo's `--dir`: an empty value (an
 * unset variable) is a usage error, not a file named "". What the path
 * names (a folder, a folder that does not exist, a file above it) is
 * checked by requireOutputPath (sqlite/output-path.ts) before any work.
 */
export function outPath(value: string): string {
  if (value === '') throw new InvalidArgumentError('expected a path, got ""');
  return value;
}
