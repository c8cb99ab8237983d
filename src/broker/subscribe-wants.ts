import fs from 'node:fs';
import { foldIdent, openDatabase, type Db } from '../sqlite/index.ts';
import { cursorContinues, decodeCursor, streamContinues, type Cursor } from '../feed/index.ts';
import type { ReasonCode } from '../reasons.ts';
import { readProjections, type ProjectionRecord } from '../apply/target/index.ts';
import { isDefaultMirror, streamMirrorAll, streamMirrors, type MirrorAll, type StreamSet } from '../apply/projections/index.ts';
import { compileProjection, parseDefinition, type ProjectionDefinitionInput, type SourceShape } from '../projection/index.ts';
import { classifyFromTarget } from '../apply/evolution/index.ts';

/*
 * A snapshot of the stream a subscriber following batches wants (docs/broker.md,
 * "Snapshots"): one that holds a table the target needs and does not hold,
 * where its batches will never bring it. That is the table of a projection
 * suspended with TABLE_UNTRACKED (its capture was taken off, and is back:
 * the publisher published a snapshot that holds it, STREAM_TABLES_ADDED),
 * and, for a target that mirrors every table ("*"), a table it has no
 * mirror of yet (enabled after the subscriber started), as a sync of "*"
 * makes the mirror of a table enabled since; the table of a projection
 * whose first build failed (a custom handler's init threw), which a sync
 * would build again at its next pass; and a snapshot that does not
 * continue the cursor of a projection the target holds (a re-arm, a bump,
 * a restore of the source: snapshotRebuilds), since the batches after it
 * do not either; and a snapshot of the table of a projection the subscriber
 * is given a definition of that differs from the one it was built with in a
 * way only a rebuild follows (redefined): no batch is applied by it, the
 * snapshot rebuilds it. Other snapshots (one published again for retention) are
 * skipped: the target's cursors go on. (A follower also stops at a snapshot
 * below the seq it reached, the source having gone back: subscribe.ts
 * weighs the history after it, historyRebuilds.)
 */

/** What a subscriber applies: its definitions (undefined: the target's), and whether "*" is among them. */
export interface SubscribedSet extends StreamSet {
  readonly sourceId: string;
  readonly projections?: readonly ProjectionDefinitionInput[] | undefined;
}

/** A snapshot's end as a subscriber sees it: its seq, the tables it holds and its cursor. */
export interface SnapshotTables {
  readonly seq: number;
  readonly tables: readonly string[];
  readonly cursor: Cursor;
}

/** The seq and tables of a snapshot end's headers (undefined: a cursor that does not parse, which the reader refuses when it gets there). */
export function snapshotTables(toSeq: string | undefined, cursor: string | undefined): SnapshotTables | undefined {
  const seq = Number(toSeq);
  if (cursor === undefined || !Number.isSafeInteger(seq)) return undefined;
  try {
    const c = decodeCursor(cursor);
    return { seq, tables: c.tables, cursor: c };
  } catch {
    return undefined;
  }
}

/** A projection whose first build failed (recorded as sync records one: building, no cursor); not one suspended before it (that waits for its cause). */
export function neverBuilt(p: { readonly cursor: string | null; readonly state: string }): boolean {
  return p.cursor === null && p.state !== 'suspended';
}

/**
 * Why the snapshot whose cursor is `cursor` rebuilds the target: it does not
 * continue the cursor of one of `records` (projections of its source) that
 * is not suspended, by the rules sync checks a cursor with (cursorContinues:
 * TABLE_REARMED, GENERATION_CHANGED, HISTORY_DIVERGED, FILE_CHANGED, ...), as
 * the importer finds when it reads it. Undefined when it continues every one,
 * or is behind it.
 */
export function snapshotRebuilds(records: readonly ProjectionRecord[], cursor: Cursor): ReasonCode | undefined {
  for (const r of records) {
    if (r.cursor === null || r.state === 'suspended') continue;
    const v = cursorContinues(r.cursor, cursor, { tables: [r.sourceTable] });
    if (v.status === 'rebuild' || v.status === 'error') return v.reason;
  }
  return undefined;
}

/**
 * Why the stream's history since its last snapshot `snap` does not continue
 * one of `records` (projections of its source, not suspended) that is past
 * it, by streamContinues (feed/cursor-check.ts): the snapshot, published
 * after the history the projection followed, lies below its seq (the source
 * was restored from an older copy: SEQ_REGRESSED), or the batch after it
 * that ends at the projection's seq carries another event there
 * (HISTORY_DIVERGED). `batchAt(seq)`: the cursor of the first batch after
 * the snapshot that ends at or past `seq`. The first holds only where the
 * stream had got to the projection's seq before the snapshot
 * (`reachedBefore`: a batch or an earlier snapshot of it ended there or
 * past it, the snapshot's end says the history it replaces had got there
 * (Sluice-Replaces-Seq), or the projection was fed from this stream
 * alone): a stream that
 * never got there is behind a target another feeder (sync, import) brought
 * further, not a source that went back, and the target goes on from its
 * cursor. Undefined when it continues every one past it.
 */
export async function historyRebuilds(
  records: readonly ProjectionRecord[],
  snap: SnapshotTables,
  batchAt: (seq: number) => Promise<Cursor | undefined>,
  reachedBefore: (r: ProjectionRecord) => Promise<boolean> = () => Promise.resolve(true),
): Promise<ReasonCode | undefined> {
  const at = new Map<number, Cursor | undefined>();
  for (const r of records) {
    if (r.cursor === null || r.state === 'suspended' || r.seq <= snap.seq) continue;
    if (!at.has(r.seq)) at.set(r.seq, await batchAt(r.seq));
    const batch = at.get(r.seq);
    // A batch after the snapshot that ends at its seq shows the event the source has there; without one, only a stream
    // that reached its seq before the snapshot shows the source went back (else the stream is behind it: it goes on).
    if (batch?.seq !== r.seq && !(await reachedBefore(r))) continue;
    const v = streamContinues(r.cursor, snap.cursor, batch, { tables: [r.sourceTable] });
    if (v.status === 'rebuild' || v.status === 'error') return v.reason;
  }
  return undefined;
}

/** "*" for this run of a subscriber: the rule import follows too (projection-set.ts streamMirrorAll). */
export function subscribedMirrorAll(db: Db, set: SubscribedSet): MirrorAll | undefined {
  return streamMirrorAll(db, 'main', readProjections(db, 'main'), set);
}

/** Whether the target at `targetPath` wants the snapshot `snap` (see above). */
export function wantsSnapshot(targetPath: string, set: SubscribedSet, snap: SnapshotTables): boolean {
  if (!fs.existsSync(targetPath)) return false;
  const db = openDatabase(targetPath, { readonly: true, role: 'target' });
  try {
    const records = readProjections(db, 'main');
    const mine = records.filter((r) => r.sourceId === set.sourceId);
    if (mine.length === 0) return false; // (it starts from a snapshot anyway)
    const given = (set.projections ?? []).map((d) => parseDefinition(d));
    const mirrorAll = subscribedMirrorAll(db, set);
    const carried = new Set(snap.tables.map(foldIdent));
    const runs = (r: ProjectionRecord) =>
      given.length === 0 ? true : given.some((d) => d.name === r.name) || (mirrorAll !== undefined && isDefaultMirror(r));
    const untracked = mine.some(
      (r) =>
        r.state === 'suspended' && r.reason === 'TABLE_UNTRACKED' && r.seq < snap.seq && carried.has(foldIdent(r.sourceTable)) && runs(r),
    );
    if (untracked) return true;
    // One whose first build failed (a custom handler's init threw): a follower builds it again from the next snapshot that holds its table.
    if (mine.some((r) => neverBuilt(r) && carried.has(foldIdent(r.sourceTable)) && runs(r))) return true;
    if (snapshotRebuilds(mine.filter(runs), snap.cursor) !== undefined) return true;
    if (redefined(db, mine, set, carried)) return true;
    const defined = given.length > 0 ? given : mine.map((r) => ({ name: r.name, source: r.sourceTable }));
    return mirrorAll !== undefined && streamMirrors(records, mirrorAll, snap.tables, defined).length > 0;
  } finally {
    db.close();
  }
}

/**
 * Whether a definition given to the subscriber (`set.projections`) of a
 * projection the target holds, built, of a table the snapshot carries
 * (`carried`, folded), differs from the one it was built with in a way only
 * a rebuild follows, as the importer classifies it (classifyFromTarget, from
 * what the target holds, the projection's stored source shape among it):
 * the batches after its cursor cannot be applied by it, the snapshot
 * rebuilds it. (A Compatible change is stored by the importer and goes on;
 * a Rejected one the importer refuses with its own reason; one that does
 * not compile is the importer's to say.)
 */
export function redefined(db: Db, mine: readonly ProjectionRecord[], set: SubscribedSet, carried: ReadonlySet<string>): boolean {
  for (const input of set.projections ?? []) {
    let d;
    try {
      d = parseDefinition(input);
    } catch {
      continue;
    }
    const rec = mine.find((r) => r.name === d.name);
    if (rec === undefined || rec.cursor === null || !carried.has(foldIdent(rec.sourceTable))) continue;
    try {
      const p = compileProjection(d, JSON.parse(rec.sourceShape) as SourceShape);
      if (p.fingerprint === rec.fingerprint) continue;
      const c = classifyFromTarget({ db, schema: 'main', sourceId: rec.sourceId, sourcePath: null }, p, rec);
      if (c !== 'compatible' && 'rebuild' in c) return true;
    } catch {
      continue;
    }
  }
  return false;
}

/** Whether the target at `targetPath` holds a projection the subscriber's given definition redefines so that only the snapshot `snap` rebuilds it (redefined). */
export function redefinedBy(targetPath: string, set: SubscribedSet, snap: SnapshotTables): boolean {
  if (!fs.existsSync(targetPath) || (set.projections ?? []).length === 0) return false;
  const db = openDatabase(targetPath, { readonly: true, role: 'target' });
  try {
    const mine = readProjections(db, 'main').filter((r) => r.sourceId === set.sourceId);
    return redefined(db, mine, set, new Set(snap.tables.map(foldIdent)));
  } finally {
    db.close();
  }
}

/** subscribedMirrorAll of the target at `targetPath` (one that does not exist yet has no projection: the default, unless definitions are given). */
export function mirrorAllAt(targetPath: string, set: SubscribedSet): MirrorAll | undefined {
  if (!fs.existsSync(targetPath)) {
    if (set.mirrorAll === true) return { origin: 'given', stored: false, sourcePath: null, except: [] };
    return set.projections !== undefined && set.projections.length > 0
      ? undefined
      : { origin: 'default', stored: false, sourcePath: null, except: [] };
  }
  const db = openDatabase(targetPath, { readonly: true, role: 'target' });
  try {
    return subscribedMirrorAll(db, set);
  } finally {
    db.close();
  }
}
