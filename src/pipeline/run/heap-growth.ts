import v8 from 'node:v8';

/**
 * V8's old-generation growth in sluice run: each full GC lets a heap grow
 * 10% past what it kept, for every worker's isolate and the main thread
 * (the flag is the process's). By default V8 lets a heap whose collections
 * are cheap grow up to 4x between them, and a follower's promoted garbage
 * took each worker's heap from about 11 MB to 24-35 MB during 5 s of 1k
 * writes/s: bench/run.ts's 4 targets peaked at 217-240 MB RSS by default
 * and at 194 MB with 10% (also with 25% and 50%), with the same CPU while
 * following (905-923 ticks for 5,000 writes either way).
 *
 * What it costs: a build that runs JavaScript per row (a custom handler's
 * init) collects more often, 5-9% more CPU for 454,000 rows (450-453
 * ticks against 477-492); a mirror's, a map's or an fts5 index's build is
 * SQLite's work. Letting V8 choose again while such a build runs was
 * tried: the heap it grew meanwhile stays until its next full GC, and the
 * run's peak was 210-220 MB.
 */
export const RUN_HEAP_GROWING_PERCENT = 10;

/** Sets the growth for this process's heaps, the workers started after it included. */
export function tightenHeapGrowth(): void {
  v8.setFlagsFromString(`--heap-growing-percent=${RUN_HEAP_GROWING_PERCENT}`);
}
