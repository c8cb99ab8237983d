/*
 * Soak-like tests (random runs, kills, property runs) run a smaller count in
 * `npm test` and their full count in `npm run bench:soak-tests`
 * (bench/soak-tests.ts), which sets SLUICE_SOAK=1 for vitest. Each test that
 * reads it says why its smaller count still reaches every path it targets.
 */

/** Whether this run is the soak run (SLUICE_SOAK=1): the full counts. */
export const SOAK = process.env.SLUICE_SOAK === '1';

/** `quick` in `npm test`, `full` in the soak run. */
export function soakCount<T>(quick: T, full: T): T {
  return SOAK ? full : quick;
}
