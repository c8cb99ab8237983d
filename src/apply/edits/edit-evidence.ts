import type { WalCommit } from '../../sqlite/index.ts';

/*
 * Which projections other programs' commits wrote, from the pages each
 * commit of the log wrote (target-watch.ts reads them): a commit that wrote
 * a page of `_sluice_projections` (`meta`) is a sluice process's; any other
 * that wrote a page of a projection's tables is an edit of it. Page
 * ownership is as the target is at the end of the commits, which is exact
 * for a commit no later one moved pages after; what cannot be placed is
 * said (`unsure`):
 * - a VACUUM (a commit that wrote every page, page 1 among them) renumbers
 *   every page: nothing written before it can be placed;
 * - a sluice commit that changed a projection may have moved its pages
 *   (a rebalanced b-tree frees some): another program's commit before it
 *   cannot be placed for that projection.
 */

/**
 * The evidence per projection name for `commits` (in order), with `pagesOf`
 * listing a table's pages now. `known` holds, per projection, a superset of
 * its pages as they were before these commits (none: not known); it is
 * moved on here (a commit that wrote one of its pages may have given it
 * the others it wrote), and replaced by the exact pages where they were
 * listed. A projection no other program's commit can have written is not
 * listed at all, and costs no listing.
 */
export function editEvidence(
  commits: readonly WalCommit[],
  meta: ReadonlySet<number>,
  watched: readonly WatchedProjection[],
  known: Map<string, Set<number>>,
  pagesOf: (table: string) => Set<number>,
): Map<string, EditEvidence> {
  const found = new Map<string, EditEvidence>();
  if (commits.length === 0) return found;
  let vacuum = -1;
  commits.forEach((c, i) => {
    if (c.pages.has(1) && c.pages.size >= c.dbPages) vacuum = i;
  });
  const isMeta = (c: WalCommit) => intersects(c.pages, meta);
  const lost = vacuum > 0;
  const rest = commits.slice(vacuum + 1);
  const foreign = rest.filter((c) => !isMeta(c));
  for (const w of watched) {
    const superset = known.get(w.name);
    if (superset !== undefined) for (const c of commits) if (intersects(c.pages, superset)) for (const p of c.pages) superset.add(p);
    if (!foreign.some((c) => superset === undefined || intersects(c.pages, superset))) {
      if (lost) found.set(w.name, { tables: [], unsure: true });
      continue;
    }
    // Another program's commit may have written it: list exactly which pages are its tables' now.
    const byTable = new Map(w.tables.map((t) => [t, pagesOf(t)]));
    const all = new Set<number>();
    for (const s of byTable.values()) for (const p of s) all.add(p);
    known.set(w.name, all);
    const hit = new Set<string>();
    let moved = false;
    let laterSluice = false;
    for (const c of [...rest].reverse()) {
      const tables = [...byTable].filter(([, s]) => intersects(c.pages, s)).map(([t]) => t);
      if (isMeta(c)) {
        if (tables.length > 0) laterSluice = true;
      } else if (laterSluice) moved = true;
      else for (const t of tables) hit.add(t);
    }
    if (hit.size > 0 || moved || lost) found.set(w.name, { tables: [...hit].sort(), unsure: moved || lost });
  }
  return found;
}

function intersects(a: ReadonlySet<number>, b: ReadonlySet<number>): boolean {
  const [small, big] = a.size <= b.size ? [a, b] : [b, a];
  for (const x of small) if (big.has(x)) return true;
  return false;
}

/** A projection and the b-tree tables its rows live in (an fts5 index's shadow tables, not the virtual table). */
export interface WatchedProjection {
  readonly name: string;
  readonly tables: readonly string[];
}

/** What the log says another program wrote of a projection. */
export interface EditEvidence {
  /** Its tables that another program's commits surely wrote. */
  readonly tables: readonly string[];
  /** Other commits may have written it and the log cannot tell (see above): its rows must be compared. */
  readonly unsure: boolean;
}
