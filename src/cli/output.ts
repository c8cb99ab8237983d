import type { z } from 'zod';
import { errorCode, SluiceError } from '../index.ts';
import { aliasFields, errorMessage } from '../internal.ts';
import { isClosedPipe, stdout, stderr } from './closed-pipe.ts';

export interface GlobalOptions {
  readonly json?: boolean;
}

/**
 * The stdout of one command: with --json, one JSON object checked against
 * the command's schema (src/cli/json-schemas.ts); readable text otherwise.
 */
export function emit(options: GlobalOptions, schema: z.ZodType, json: unknown, human: () => string): void {
  if (options.json === true) {
    const plain: unknown = JSON.parse(JSON.stringify(json, jsonReplacer));
    const checked = schema.safeParse(plain);
    if (!checked.success) throw new Error(`internal: --json output does not match its documented schema: ${checked.error.message}`);
    stdout().write(`${JSON.stringify(plain)}\n`);
  } else stdout().write(`${human()}\n`);
}

export function jsonReplacer(_key: string, value: unknown): unknown {
  return typeof value === 'bigint'
    ? value <= BigInt(Number.MAX_SAFE_INTEGER) && value >= -BigInt(Number.MAX_SAFE_INTEGER)
      ? Number(value)
      : value.toString()
    : value;
}

/** Thrown by a command that finished but must exit non-zero (e.g. 3: needs action). */
export class ExitSignal extends Error {
  readonly exitCode: number;
  constructor(exitCode: number) {
    super(`exit ${exitCode}`);
    this.exitCode = exitCode;
  }
}

/** Reports an error on stderr (one line, no stack for our own errors) and returns the exit code. */
export function reportError(err: unknown, options: GlobalOptions): number {
  if (err instanceof ExitSignal) return err.exitCode;
  if (isClosedPipe(err)) return 0; // export --out - to a reader that has gone (see closed-pipe.ts)
  if (err instanceof SluiceError) {
    if (options.json === true)
      stdout().write(`${JSON.stringify({ error: { code: err.code, message: err.message, ...aliasFields(err.code) } })}\n`);
    stderr().write(`sluice: ${err.code}: ${err.message}\n`);
    return err.exitCode;
  }
  const raw = errorCode(err);
  const code = typeof raw === 'string' ? raw : 'INTERNAL';
  const message = errorMessage(err) ?? String(err);
  if (options.json === true) stdout().write(`${JSON.stringify({ error: { code, message, ...aliasFields(code) } })}\n`);
  stderr().write(`sluice: ${code}: ${message}\n`);
  if (process.env.SLUICE_DEBUG !== undefined && err instanceof Error) stderr().write(`${err.stack ?? ''}\n`);
  return 1;
}
