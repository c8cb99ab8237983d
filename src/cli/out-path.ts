import { InvalidArgumentError } from 'commander';

/** `--out PATH` of export and strip, demo's `--dir`: an empty value (an unset variable) is a usage error, not a file named "". */
export function outPath(value: string): string {
  if (value === '') throw new InvalidArgumentError('expected a path, got ""');
  return value;
}
