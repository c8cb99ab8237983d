import type { Db } from '../../sqlite/index.ts';
import { cachedStatement, quoteIdent, writeTransaction } from '../../sqlite/index.ts';
import { PROJECTIONS_TABLE } from '../../capture/index.ts';

/*
 * How a target's projection is fed, when not by sync (whose row names its
 * source path, recordSynced: also a row an import made, once a sync feeds it): by `sluice subscribe` (the broker, the stream and the
 * source id it reads), or by `sluice import` (the file it last imported,
 * and when). Recorded in the projection's row (`fed_by`, JSON), in the
 * transaction that commits what the feeder applied, and at the end of a
 * run that applied nothing. health reads it: a subscribed projection's lag
 * can be read from the recorded stream, an imported one's is not tracked.
 */

export type FedBy =
  | { readonly via: 'subscribe'; readonly url: string; readonly stream: string; readonly sourceId: string }
  | { readonly via: 'import'; readonly file: string; readonly ms: number };

/**
 * `nats://a:4222, nats://b:4222` -> its URLs (none for "" or ","). A
 * server's login (`user:password@`, `token@`) runs to its last @ before the
 * next server that starts with a scheme (`nats://`, `tls://`...): a ',' or
 * '@' inside it is part of it (`nats://app:p@ss,w0rd@host:4222` is one
 * server). So servers are split at a ',' followed by a scheme, and, where
 * there is no login or after it, at each ',' between `host:port` pieces
 * (`nats://u:p@a:4222,b:4222`). Split anywhere else, part of a password
 * was a "server" that errors printed. A server after the first that
 * carries a login of its own starts with its scheme.
 */
export function splitServers(list: string): string[] {
  return listPieces(list)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

/** A scheme at the start of a piece: `nats://`, `tls://`, `ws://` (after blanks). */
const SCHEME = /^\s*[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** `list` split at the commas between its servers (splitServers), each piece as written. */
function listPieces(list: string): string[] {
  // Groups: a server that starts with a scheme and what follows it up to the next one.
  const groups: string[] = [];
  for (const piece of list.split(',')) {
    if (groups.length === 0 || SCHEME.test(piece)) groups.push(piece);
    else groups[groups.length - 1] += `,${piece}`;
  }
  const out: string[] = [];
  for (const g of groups) {
    // Up to its last @ a group is one server's login; the host:port pieces after it are servers each.
    const at = g.lastIndexOf('@');
    const comma = g.indexOf(',', at + 1);
    if (comma < 0) out.push(g);
    else out.push(g.slice(0, comma), ...g.slice(comma + 1).split(','));
  }
  return out;
}

/**
 * A broker URL as it may be stored in a target: without the user, password
 * or token of any server in it (`nats://u:p@h:4222,u:p@h2` -> `nats://h:4222,h2`).
 */
export function withoutCredentials(url: string): string {
  return listPieces(url)
    .map((s) => splitLogin(s).rest)
    .join(',');
}

/** The login (`user:password`, or a token) of the first server of `url` that carries one, as written (not decoded). */
export function urlLogin(url: string): string | undefined {
  for (const s of listPieces(url)) {
    const { login } = splitLogin(s);
    if (login !== undefined) return login;
  }
  return undefined;
}

/**
 * One server URL split at its last @: a broker URL has no path and a host
 * no @, so everything between the scheme and that @ is the login, a
 * password's own @, / or + included (a password written in the URL as it
 * is, as ${NATS_PASSWORD} expands into sluice.yml).
 */
function splitLogin(server: string): { login: string | undefined; rest: string } {
  const at = server.lastIndexOf('@');
  if (at < 0) return { login: undefined, rest: server };
  const scheme = server.indexOf('//');
  const start = scheme >= 0 && scheme < at ? scheme + 2 : 0;
  return { login: server.slice(start, at), rest: server.slice(0, start) + server.slice(at + 1) };
}

/** The stored record, or null (none, or not one this sluice reads). */
export function parseFedBy(text: unknown): FedBy | null {
  if (typeof text !== 'string') return null;
  try {
    const o = JSON.parse(text) as Record<string, unknown>;
    if (o.via === 'subscribe' && typeof o.url === 'string' && typeof o.stream === 'string' && typeof o.sourceId === 'string')
      return { via: 'subscribe', url: o.url, stream: o.stream, sourceId: o.sourceId };
    if (o.via === 'import' && typeof o.file === 'string' && typeof o.ms === 'number') return { via: 'import', file: o.file, ms: o.ms };
  } catch {
    /* not JSON: as if absent */
  }
  return null;
}

/** Records how projections `names` are fed, in the caller's transaction (a row that already says so is not written). */
export function recordFedBy(db: Db, schema: string, names: Iterable<string>, fedBy: FedBy): void {
  const text = JSON.stringify(fedBy);
  // Cached: a subscriber records it with every batch it applies.
  const update = cachedStatement(db, `UPDATE ${quoteIdent(schema)}.${PROJECTIONS_TABLE} SET fed_by = ? WHERE name = ? AND fed_by IS NOT ?`);
  for (const name of names) update.run(text, name, text);
}

/**
 * Records that sync feeds projections `names` from the source at
 * `sourcePath` (absolute), in a transaction of the caller's: a row an
 * import or a subscriber made (no source path) or one synced from another
 * path is fed by this source from now on, and health reads its lag here.
 * Only rows of source `sourceId` are changed, and only when they say
 * otherwise; returns how many did.
 */
export function recordSynced(db: Db, schema: string, names: Iterable<string>, sourceId: string, sourcePath: string): number {
  const update = db.prepare(
    `UPDATE ${quoteIdent(schema)}.${PROJECTIONS_TABLE} SET source_path = ?, fed_by = NULL WHERE name = ? AND source_id = ? AND source_path IS NOT ?`,
  );
  let changed = 0;
  for (const name of names) changed += update.run(sourcePath, name, sourceId, sourcePath).changes;
  return changed;
}

/** Records a subscriber as the feeder of the target's projections of its source that no sync feeds, in a transaction of its own. */
export async function recordSubscribed(db: Db, schema: string, fedBy: Extract<FedBy, { via: 'subscribe' }>): Promise<void> {
  const names = db
    .prepare(`SELECT name FROM ${quoteIdent(schema)}.${PROJECTIONS_TABLE} WHERE source_id = ? AND source_path IS NULL`)
    .pluck()
    .all(fedBy.sourceId) as string[];
  if (names.length > 0) await writeTransaction(db, () => recordFedBy(db, schema, names, fedBy), { mode: 'immediate' });
}
