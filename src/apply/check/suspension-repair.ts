import { repairAction, shellCommand, shellWord, type Db } from '../../sqlite/index.ts';
import { nextSyncArming, rearmFix, unarmedDetail, unarmedExclusion } from '../../capture/index.ts';
import { excludeOf } from '../projections/index.ts';
import { currentCode } from '../../reasons.ts';
import type { FedBy } from '../target/index.ts';

/*
 * The repair of a projection whose source table is not armed
 * (TABLE_UNARMED), said alike by sync, health and verify. The catalog's
 * repair of TABLE_UNARMED (src/reasons.ts) cannot know why the table is not
 * armed: a table unarmed for a reason enable's re-arm repairs (a trigger
 * another program dropped, a column added) is re-armed by the next sync by
 * itself, which then rebuilds the projection (CAPTURE_REARMED); one enable
 * refuses as it is (UNIQUE_FROM_ROWID, ...) must be changed first, as
 * status says (rearmFix).
 */

/**
 * What to do about projection `name`, whose source table `table` was found
 * not armed for `why`, by how the next sync finds the table (`arming`:
 * capture's nextSyncArming, read on the source as it is now): armed again,
 * that sync lifts the suspension by itself; re-armed by it, it rebuilds;
 * else the source must be fixed first, as status says (rearmFix), with
 * the table's arming `detail` when it was read (it names the change).
 */
export function unarmedRepair(
  name: string,
  table: string,
  why: string | undefined,
  arming: 'armed' | 'rearmed' | 'unarmed',
  paths: { readonly source: string; readonly target: string },
  detail?: string,
  exclude?: readonly string[],
): string {
  const sync = shellCommand('sync', paths);
  if (arming === 'armed') return `TABLE_UNARMED: ${table} is armed again: run ${sync}, which lifts the suspension of ${name} by itself`;
  if (arming === 'rearmed')
    return `TABLE_UNARMED: run ${sync}: it re-arms ${table} on the source and rebuilds ${name} from a snapshot (CAPTURE_REARMED)`;
  return `TABLE_UNARMED: fix the source: ${rearmFix(paths.source, table, why, exclude)}, then run sluice sync again${detail === undefined ? '' : ` (${table} is not armed: ${detail})`}`;
}

/**
 * The table and its arming reason that a TABLE_UNARMED suspension (`why`)
 * or cursor check (`reason`) recorded in its detail; `table` when it names
 * none.
 */
export function unarmedOf(
  detail: Readonly<Record<string, unknown>> | null | undefined,
  table: string,
): { readonly table: string; readonly why: string | undefined; readonly exclude?: readonly string[] } {
  const why = detail?.why ?? detail?.reason;
  const exclude = excludeOf(detail);
  return {
    table: typeof detail?.table === 'string' ? detail.table : table,
    why: typeof why === 'string' ? why : undefined,
    ...(exclude === undefined ? {} : { exclude }),
  };
}

/**
 * What to do about suspended projection `r`, with the command: the
 * catalog's repair (repairAction), but for TABLE_UNARMED the one above,
 * where `source` (read as it is now) tells how the next sync finds its
 * table; without it (said by the sync that suspended it, whose re-arm just
 * left the table unarmed), the source must be fixed first.
 */
export function suspensionRepair(
  r: {
    readonly name: string;
    readonly reason?: string | null | undefined;
    readonly detail?: Readonly<Record<string, unknown>> | null | undefined;
    readonly sourceTable?: string | undefined;
    readonly sourcePath?: string | null | undefined;
    readonly fedBy?: FedBy | null | undefined;
  },
  sourcePath: string | undefined,
  targetPath: string | undefined,
  source?: Db,
): string {
  const fed = subscribedFeed(r);
  if (fed !== undefined && r.reason != null && currentCode(r.reason) === 'TABLE_UNTRACKED' && targetPath !== undefined)
    return untrackedSubscribed(r.name, r.sourceTable ?? r.name, fed, targetPath);
  if (
    r.reason != null &&
    currentCode(r.reason) === 'NEEDS_IMAGES_MODE' &&
    r.sourcePath == null &&
    r.fedBy != null &&
    targetPath !== undefined
  )
    return imagesModeFed(r.name, r.sourceTable ?? r.name, r.fedBy, targetPath);
  const named = typeof r.detail?.table === 'string' ? r.detail.table : r.sourceTable;
  if (
    r.reason != null &&
    currentCode(r.reason) === 'TABLE_UNARMED' &&
    sourcePath !== undefined &&
    targetPath !== undefined &&
    named !== undefined
  ) {
    const { table, why, exclude } = unarmedOf(r.detail, named);
    const arming = source === undefined ? 'unarmed' : nextSyncArming(source, table);
    const detail = source === undefined || arming !== 'unarmed' ? undefined : unarmedDetail(source, table);
    // Read on the source as it is now when it is given (the suspension's may be older).
    const told = source === undefined ? exclude : arming === 'unarmed' ? unarmedExclusion(source, table) : undefined;
    return unarmedRepair(r.name, table, why, arming, { source: sourcePath, target: targetPath }, detail, told);
  }
  // It names the trigger, its table, what it writes and the statement that drops it (apply/sync/batch-path.ts).
  if (r.reason != null && currentCode(r.reason) === 'USER_TRIGGER_WRITES_PROJECTION' && typeof r.detail?.message === 'string')
    return `USER_TRIGGER_WRITES_PROJECTION: ${r.detail.message}`;
  if (r.reason != null && currentCode(r.reason) === 'SOURCE_AFFINITY' && typeof r.detail?.rewrite === 'string')
    return sourceAffinityRepair(r.name, r.detail, sourcePath, targetPath);
  return repairAction(r.name, r.reason, sourcePath, targetPath, r.sourceTable);
}

/**
 * SOURCE_AFFINITY, with the statement its detail records (source-affinity.ts)
 * as the command that runs it: the values are stored again in the source,
 * then the projection rebuilt. (A rebuild alone would copy them as they are
 * again: only the source can change them.)
 */
function sourceAffinityRepair(
  name: string,
  detail: Readonly<Record<string, unknown>>,
  sourcePath: string | undefined,
  targetPath: string | undefined,
): string {
  const columns = Array.isArray(detail.columns) ? detail.columns.filter((c) => typeof c === 'string') : [];
  const table = typeof detail.table === 'string' ? detail.table : 'the source table';
  const source = sourcePath === undefined ? 'SOURCE' : shellWord(sourcePath);
  const rebuild = shellCommand('reinit', { source: sourcePath, target: targetPath, projection: name });
  return `SOURCE_AFFINITY: ${columns.map((c) => `${table}.${c}`).join(', ')} hold${columns.length === 1 ? 's' : ''} values that ${columns.length === 1 ? 'its declared type stores' : 'their declared types store'} in another class (sluice health --json: detail.message), which no copy can hold as they are; store them again in the source, each as its declared type stores it: sluice query ${source} ${shellWord(String(detail.rewrite))} (the capture journals each value it changes), or declare ${columns.length === 1 ? 'the column' : 'the columns'} as before; then rebuild: ${rebuild}`;
}

/** The stream that feeds projection `r`, when sluice subscribe feeds it (no source path: sync has nothing to sync it from). */
export function subscribedFeed(r: {
  readonly sourcePath?: string | null | undefined;
  readonly fedBy?: FedBy | null | undefined;
}): Extract<FedBy, { via: 'subscribe' }> | undefined {
  return r.sourcePath == null && r.fedBy?.via === 'subscribe' ? r.fedBy : undefined;
}

/**
 * TABLE_UNTRACKED of a subscribed projection: the table is captured again on
 * the source, whose publisher then publishes a snapshot that holds it
 * (STREAM_TABLES_ADDED), and subscribe rebuilds the projection from it.
 */
function untrackedSubscribed(name: string, table: string, f: Extract<FedBy, { via: 'subscribe' }>, targetPath: string): string {
  return `TABLE_UNTRACKED: stream ${f.stream} at ${f.url} does not carry ${table}, so ${name} gets none of its events: capture it on the source (${shellCommand('enable', { source: 'SOURCE', table })}, SOURCE: the database of source ${f.sourceId}); its publisher then publishes a snapshot that holds it (STREAM_TABLES_ADDED), and sluice subscribe rebuilds ${name} from it (a subscriber following the stream at once, else its next run); or remove the projection and its tables: ${shellCommand('drop', { target: targetPath, projection: name })}`;
}

/**
 * NEEDS_IMAGES_MODE of a projection a file or a stream feeds (no source path:
 * no sync to run): nothing in the target needs repair; the source captures
 * the table in images mode, and a snapshot taken after that rebuilds the
 * projection: a new export file imported, or the snapshot the publisher
 * publishes then (the change of mode ends the stream's position), which
 * sluice subscribe rebuilds it from.
 */
function imagesModeFed(name: string, table: string, fedBy: FedBy, targetPath: string): string {
  const source = fedBy.via === 'subscribe' ? `the database of source ${fedBy.sourceId}` : 'the database the export files are written from';
  const fix = `fix the source: capture ${table} in images mode (${shellCommand('enable', { source: 'SOURCE', table })} --mode images, SOURCE: ${source})`;
  const then =
    fedBy.via === 'subscribe'
      ? `its publisher then publishes a new snapshot (the change of mode ends the stream's position), and sluice subscribe rebuilds ${name} from it (a subscriber following stream ${fedBy.stream} at once, else its next run)`
      : `then export a new file (sluice export SOURCE --out NEW_FILE starts with a snapshot) and import it (sluice import ${shellWord(targetPath)} NEW_FILE), which rebuilds ${name}`;
  return `NEEDS_IMAGES_MODE: nothing in the target needs repair; ${fix}; ${then}`;
}
