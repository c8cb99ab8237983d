import type { TargetWatch } from './target-watch.ts';
import { buildWatchName } from './target-edits.ts';

/**
 * What a syncer's watch of the target's log (target-watch.ts) can vouch for
 * of the protected rebuilds it started (the BuildWatch of
 * apply/rebuild/build-step.ts): that no other program wrote a build's
 * tables (its shadow, its staged copy) since it started. A build started by
 * another process, or before a crash, is never vouched for: what was written
 * to its tables meanwhile is unknown, and it is validated row by row.
 */
export class BuildVouch {
  readonly #watch: TargetWatch;
  /** Per projection, the token of the build this syncer started and has seen no other program write. */
  readonly #clean = new Map<string, string>();

  constructor(watch: TargetWatch) {
    this.#watch = watch;
  }

  started(name: string, token: string): void {
    this.#clean.set(name, token);
  }

  /**
   * In each step of projection `name`, after the watch read the log up to
   * the target's lock: a write by another program to its build's tables
   * (or a commit the watch could not place) ends the vouching for that build.
   */
  locked(name: string): void {
    const at = buildWatchName(name);
    if (this.#watch.evidence(at) === undefined) return;
    this.#clean.delete(name);
    this.#watch.settle(at);
  }

  vouched(name: string, token: string | undefined): boolean {
    return token !== undefined && this.#clean.get(name) === token;
  }
}
