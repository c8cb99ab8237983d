/*
 * What `sluice run` says as it works: one line per event on stderr, either
 * readable text or (`--log json`) one JSON object a log collector parses:
 * {"t":"<ISO time>","level":"info|warn|error","part":"<kind>:<name>","event":"<word>","msg":"<text>", ...extra}
 * docs/deploy.md documents that format; keep both in step.
 */

export type LogLevel = 'info' | 'warn' | 'error';
export type LogFormat = 'text' | 'json';

/** A part's events: start, built, applied, suspended, failed, retry, reload, config-invalid, stop... */
export type PartLog = (level: LogLevel, event: string, msg: string, extra?: Readonly<Record<string, unknown>>) => void;

export class RunLog {
  readonly #format: LogFormat;
  readonly #write: (line: string) => void;

  constructor(format: LogFormat, write: (line: string) => void) {
    this.#format = format;
    this.#write = write;
  }

  /** Says one event of `part` ("kind:name", or "run" for the process itself). */
  event(level: LogLevel, part: string, event: string, msg: string, extra: Readonly<Record<string, unknown>> = {}): void {
    const t = new Date().toISOString();
    if (this.#format === 'json') this.#write(`${JSON.stringify({ t, level, part, event, msg, ...extra })}\n`);
    // One line per event in text too (a reader by line, journald, makes one entry each): a newline in a message is shown as \n.
    else this.#write(`${t} ${level.padEnd(5)} ${part} ${event}: ${msg.replace(/\r?\n/g, '\\n')}\n`);
  }

  /** The log of one part. */
  part(name: string): PartLog {
    return (level, event, msg, extra) => this.event(level, name, event, msg, extra);
  }
}
