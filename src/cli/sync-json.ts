import type { SyncReport } from '../index.ts';
import { aliasFields } from '../internal.ts';

/** A sync report as `sync --json` prints it (json-schemas.ts's syncOutput): one object per run, or per pass of a follower. */
export function reportJson(r: SyncReport): unknown {
  return {
    sourceSeq: r.sourceSeq,
    projections: r.projections.map((p) => ({
      name: p.name,
      state: p.state,
      ...(p.reason === undefined ? {} : { reason: p.reason, detail: p.detail }),
      applied: p.applied,
      ...(p.snapshotRows === undefined ? {} : { snapshotRows: p.snapshotRows }),
      ...(p.rebuilt === undefined ? {} : { rebuilt: p.rebuilt }),
      ...(p.swapped === undefined ? {} : { swapped: p.swapped }),
      cursor: p.cursor,
      seq: p.seq,
      ...(p.error === undefined ? {} : { error: { ...p.error, ...aliasFields(p.error.code) } }),
      ...(p.stopped === undefined ? {} : { stopped: p.stopped }),
      ...(p.droppedIndexes === undefined ? {} : { droppedIndexes: p.droppedIndexes }),
      ...(p.droppedTriggers === undefined ? {} : { droppedTriggers: p.droppedTriggers }),
    })),
    ...(r.rearmed === undefined ? {} : { rearmed: r.rearmed }),
    ...(r.unmirrored === undefined ? {} : { unmirrored: r.unmirrored }),
    ...(r.lost === undefined ? {} : { lost: r.lost.map((l) => ({ ...l, code: 'CONSUMER_NOT_BUILT' })) }),
    ...(r.forgotten === undefined ? {} : { forgotten: r.forgotten }),
  };
}
