import { heldFile, repairOf, schemaVersion, type Db } from '../../sqlite/index.ts';
import { BROKEN_DEFINITION_REASONS, compileStoredToday, isBroken, type BrokenDefinition } from '../projections/index.ts';
import type { ProjectionRecord } from '../target/index.ts';

/*
 * Whether the next sync suspends a stored projection because its definition
 * no longer fits the source (a column its computed columns or filter read
 * dropped or renamed, its table gone): compileStoredToday, the rule sync
 * compiles by and explain forecasts by, so health says what sync will do.
 *
 * That compile lets SQLite judge each expression (a TEMP probe table per
 * computed column), and health runs often (sluice run's /healthz and each
 * metrics scrape, a new connection each time). Its answer depends only on
 * the definition and the source's schema (capture's left-out columns
 * included: changing them re-arms the triggers, which is DDL), so it is kept
 * per source file, schema_version and the table's CREATE statement (an
 * older copy copied over the file in place can share a schema_version), and
 * compiled again only after DDL.
 */

/** Answers kept at most (a process that watches many targets drops the oldest). */
const KEPT = 512;
const answers = new Map<string, BrokenDefinition | null>();

/**
 * The suspension the next sync gives projection `r` (read from `source`, in
 * the caller's read transaction) because its stored definition no longer
 * fits the source; undefined when it compiles, or when `r` is already
 * suspended for that reason (its suspension's repair says it).
 */
export function brokenForecast(source: Db, r: ProjectionRecord): BrokenDefinition | undefined {
  const file = heldFile(source);
  const table = source.prepare("SELECT sql FROM main.sqlite_schema WHERE type = 'table' AND name = ?").pluck().get(r.sourceTable);
  const key = JSON.stringify([source.name, file?.dev, file?.ino, file?.birth, schemaVersion(source), table ?? null, r.definition]);
  let b = answers.get(key);
  if (b === undefined) {
    const today = compileStoredToday(source, r);
    b = isBroken(today) ? today : null;
    if (answers.size >= KEPT) answers.delete(answers.keys().next().value as string);
    answers.set(key, b);
  }
  if (b === null || (r.state === 'suspended' && r.reason === b.reason && BROKEN_DEFINITION_REASONS.has(b.reason))) return undefined;
  return b;
}

/** The problem health reports for a projection the next sync suspends (brokenForecast), with the repair the suspension will have. */
export function brokenProblem(b: BrokenDefinition, r: ProjectionRecord, targetPath: string): string {
  const repair = repairOf(b.reason, { source: r.sourcePath ?? undefined, target: targetPath, projection: r.name, table: r.sourceTable });
  return `${b.reason}: the next sluice sync suspends ${r.name}, whose definition no longer fits the source (${String(b.detail.message)}): ${repair}`;
}
