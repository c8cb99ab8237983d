import fs from 'node:fs';
import { loadDefinitions, type ProjectionDefinition } from '../../projection/index.ts';
import type { DefinitionInput } from '../../apply/projections/index.ts';
import { MIRROR_ALL } from '../../apply/projections/index.ts';

/*
 * The --projection files of a follower, watched by their file identity,
 * size and times (a stat per file at most every 100 ms while passes run,
 * and at each idle poll): when one
 * changes, the follower loads them again and compiles the new definitions
 * (Syncer.setDefinitions), so fixing a definition that stopped compiling
 * takes its projection up again without a restart.
 */

export async function loadAll(files: readonly string[]): Promise<ProjectionDefinition[] | undefined> {
  if (files.length === 0) return undefined;
  const defs: ProjectionDefinition[] = [];
  for (const f of files) defs.push(...(await loadDefinitions(f)));
  return defs;
}

/** What sync (and explain, reinit) is given with --projection: each file's definitions, and `*` (not a file) for the mirror of every captured table. */
export async function loadInputs(files: readonly string[]): Promise<DefinitionInput[] | undefined> {
  if (files.length === 0) return undefined;
  const inputs: DefinitionInput[] = [];
  for (const f of files) {
    if (f === MIRROR_ALL) inputs.push(MIRROR_ALL);
    else inputs.push(...(await loadDefinitions(f)));
  }
  return inputs;
}

/** A file's identity, size and times: another stamp, another file (or none: 'missing'). */
export function stamp(file: string): string {
  if (file === MIRROR_ALL) return MIRROR_ALL;
  try {
    const s = fs.statSync(file);
    return `${s.dev}:${s.ino}:${s.size}:${s.mtimeMs}:${s.ctimeMs}`;
  } catch {
    return 'missing';
  }
}

export class DefinitionFiles {
  readonly #files: readonly string[];
  #stamps: string[];
  /** When changed() last looked at the files, and whether it saw a change that load() has not taken yet. */
  #lookedMs = Number.NEGATIVE_INFINITY;
  #seen = false;
  /** The stamps at changedAndSettled's last look. */
  #lastLook: string | undefined;

  /**
   * `files` as they were loaded (the open read them). `before`: stamps taken
   * before the load read them, which win over a stamp taken now: a file
   * saved while it was being loaded then reads as changed, not as loaded.
   */
  constructor(files: readonly string[], before?: ReadonlyMap<string, string>) {
    this.#files = files;
    this.#stamps = files.map((f) => before?.get(f) ?? stamp(f));
  }

  /** The stamps of `files` (and of these), as they are now: for the `before` of the next load. */
  stampsNow(files: readonly string[] = []): Map<string, string> {
    return new Map([...this.#files, ...files].map((f) => [f, stamp(f)]));
  }

  /**
   * Whether a file changed (or went, or came back) since it was last loaded;
   * with `unlessLookedWithinMs`, false without a look when the last one is
   * that recent (a follower asks before each pass, one per source commit).
   */
  changed(unlessLookedWithinMs = 0): boolean {
    const now = Date.now();
    if (this.#seen || now - this.#lookedMs < unlessLookedWithinMs) return this.#seen;
    this.#lookedMs = now;
    this.#seen = this.#files.some((f, i) => stamp(f) !== this.#stamps[i]);
    return this.#seen;
  }

  /**
   * Whether a file changed since it was last loaded and looked the same at
   * the look before this one (sluice run's watch, every 0.5 s): a file
   * being written (an editor that truncates then writes, a copy in
   * progress) is taken once it stopped changing, never half-written, which
   * may still parse as a file that declares less (and under prune, drops
   * it).
   */
  changedAndSettled(): boolean {
    const now = this.#files.map(stamp).join('\n');
    const before = this.#lastLook;
    this.#lastLook = now;
    return now !== this.#stamps.join('\n') && now === before;
  }

  /**
   * The definitions, loaded again. Throws what loading throws (a file that
   * is not valid JSON, or is gone): the caller keeps the definitions it has,
   * and the next change is loaded again.
   */
  async load(): Promise<DefinitionInput[]> {
    this.#stamps = this.#files.map(stamp);
    this.#seen = false;
    return (await loadInputs(this.#files)) ?? [];
  }
}
