import fs from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { decodeCursor } from '../feed/index.ts';
import { InvalidInputError, type SluiceError } from '../errors.ts';

/*
 * The publisher's position, in a small file next to the source
 * (`<db>.publish-<stream>.cursor`): the cursor of a batch or snapshot the
 * broker acknowledged, replaced atomically (written, synced, renamed). Not in
 * the source's _sluice_consumers row: publish, like export, only reads the
 * source.
 *
 * Written behind the publishing, not before the next batch: the sync took
 * milliseconds per batch on a busy disk, in the path of every batch that
 * followed (bench/fan-out.ts). The file may lag the broker's acks by the
 * write in flight; that is safe, because the file is only ever behind:
 * a publisher that starts again resumes from the furthest of the file and
 * the stream's own last batch and snapshot, and a batch published again from
 * an older position has the same Nats-Msg-Id (the broker drops the copy) and
 * a range subscribers' cursors already passed.
 *
 * And at most one write every SAVE_GAP_MS while it publishes (a flush, and
 * close, write the latest at once): a write and its sync per acknowledged
 * message cost a busy publisher a fifth of its CPU (bench/fan-out.ts), for a
 * file that only has to be no further than the broker.
 */

/** The least time between two writes of the state file while publishing (flush does not wait for it). */
const SAVE_GAP_MS = 100;

/**
 * Saves positions behind the publisher: one write at a time, each of the
 * latest cursor given; `flush` waits for the last one. A write that fails is
 * thrown by the next `save` or `flush`.
 */
export class StateFileWriter {
  readonly file: string;
  #latest: string | undefined;
  #written: string | undefined;
  #writing: Promise<void> | undefined;
  #failed: unknown;
  /** Ends the pause between two writes (flush wants the latest now). */
  #hurry: (() => void) | undefined;
  #flushing = 0;

  constructor(file: string) {
    this.file = file;
    removeDeadTemps(file);
  }

  save(cursor: string): void {
    this.#throwFailure();
    this.#latest = cursor;
    this.#writing ??= this.#drain();
  }

  /** Waits until the latest cursor given is in the file. */
  async flush(): Promise<void> {
    this.#flushing++;
    try {
      this.#hurry?.();
      while (this.#writing !== undefined) await this.#writing;
    } finally {
      this.#flushing--;
    }
    this.#throwFailure();
  }

  async #drain(): Promise<void> {
    try {
      while (this.#latest !== undefined && this.#latest !== this.#written) {
        const cursor = this.#latest;
        await replaceFileAsync(this.file, cursor);
        this.#written = cursor;
        if (this.#flushing === 0) await this.#pause();
      }
    } catch (err) {
      this.#failed = err;
    } finally {
      this.#writing = undefined;
    }
  }

  /** SAVE_GAP_MS, or until flush hurries it. */
  #pause(): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(t);
        this.#hurry = undefined;
        resolve();
      };
      const t = setTimeout(done, SAVE_GAP_MS);
      this.#hurry = done;
    });
  }

  #throwFailure(): void {
    if (this.#failed === undefined) return;
    const err = this.#failed;
    this.#failed = undefined;
    throw err;
  }
}

/**
 * replaceFile (export/resume-point.ts) off the event loop's thread: written,
 * synced, then renamed over the file. Through a temporary file of this
 * write's own (process id and a random part): two publishers of one source
 * (a second follower started by mistake, a one-shot publish beside the
 * follower) both save here, and with one shared `<file>.tmp` one renamed the
 * other's away, which then died with a raw ENOENT. Each rename is whole, so
 * the file holds one of their cursors, each one the broker acknowledged
 * (behind, never ahead: the rule above).
 */
async function replaceFileAsync(file: string, text: string): Promise<void> {
  const tmp = `${file}.${process.pid}-${randomBytes(4).toString('hex')}.tmp`;
  try {
    const fh = await fs.promises.open(tmp, 'wx');
    try {
      await fh.writeFile(`${text}\n`);
      await fh.sync();
    } finally {
      await fh.close();
    }
    await fs.promises.rename(tmp, file);
  } catch (err) {
    await fs.promises.rm(tmp, { force: true }).catch(() => {});
    throw err;
  }
}

/** The saved position, or undefined when there is none yet. */
export function readStateFile(file: string): string | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
  if (text === '') return undefined;
  try {
    decodeCursor(text);
  } catch (err) {
    throw new InvalidInputError(
      'PUBLISH_STATE_FILE',
      `Publish state file ${file} does not hold a sluice cursor (${(err as SluiceError).message ?? String(err)}). Delete it: publish then resumes from the stream's last batch.`,
      { cause: err },
    );
  }
  return text;
}

/**
 * Removes the temporary files of writes (replaceFileAsync) whose process is
 * gone: a publisher killed between the open and the rename left its
 * `<file>.<pid>-<hex>.tmp` beside the user's database, and no later one
 * wrote that name again. A live process's file is left alone (its write may
 * be in flight); so is anything that is not one of these names, or cannot be
 * removed.
 */
function removeDeadTemps(file: string): void {
  const dir = path.dirname(file);
  const base = path.basename(file);
  let names: string[];
  try {
    names = fs.readdirSync(dir);
  } catch {
    return;
  }
  for (const name of names) {
    if (!name.startsWith(`${base}.`)) continue;
    const m = /^(\d+)-[0-9a-f]{8}\.tmp$/.exec(name.slice(base.length + 1));
    if (m === null || processAlive(Number(m[1]))) continue;
    try {
      fs.rmSync(path.join(dir, name), { force: true });
    } catch {
      /* another process's, or a folder that is not ours to change: left */
    }
  }
}

/** Whether a process with this id runs (one we may not signal runs too). */
function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
