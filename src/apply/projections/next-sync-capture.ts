import { nextSyncArming } from '../../capture/index.ts';
import type { SourceView } from '../../feed/index.ts';
import type { Db } from '../../sqlite/index.ts';
import { captureFacts, type CaptureFacts } from './cursor-break.ts';

/**
 * How the next sync finds `table` when it steps a projection of it: as
 * `view` (read on the source `db`, in the caller's transaction) captures
 * it, and armed again (`rearmed`) when the re-arm that sync runs on opening
 * the source arms it as it is now (capture's nextSyncArming), before it
 * steps a projection. The one rule by which health and explain forecast
 * "the next sync re-arms it". Reads only.
 */
export function nextSyncCapture(db: Db, view: SourceView, table: string): CaptureFacts & { readonly rearmed: boolean } {
  const t = captureFacts(view, table);
  const rearmed = t.tracked && !t.armed && nextSyncArming(db, table) !== 'unarmed';
  return rearmed ? { ...t, armed: true, rearmed } : { ...t, rearmed };
}
