import { SluiceError } from '../errors.ts';
import { leadingKeywords, refuseTransactionControl } from '../sqlite/index.ts';
import { PREFIX } from './schema.ts';

/*
 * What `sluice alter` refuses, statement by statement, before running it.
 * Each rule says why; the whole transaction is rolled back, so nothing of
 * the script is left behind.
 */

const ANOTHER_FILE = (kw: string) =>
  `${kw} reaches another database file, and alter changes exactly one source in one transaction. Run the DDL of each file with sluice alter on that file`;
const TRANSACTION = (kw: string) =>
  `${kw} would end or nest the one write transaction alter runs the script in (with the capture changes it needs). Pass the statements alone; alter commits them together or not at all`;

const REFUSED: Readonly<Record<string, (kw: string) => string>> = {
  ATTACH: ANOTHER_FILE,
  DETACH: ANOTHER_FILE,
  PRAGMA: () =>
    "PRAGMA changes settings outside the schema (foreign_keys, writable_schema, journal_mode...) that alter cannot record or undo. Set the pragma with the sqlite3 shell, outside alter; alter itself runs the script with foreign_keys off and checks foreign keys at the end (PRAGMA foreign_key_check), as SQLite's 12-step ALTER procedure says",
  ...refuseTransactionControl(TRANSACTION),
  VACUUM: () =>
    'VACUUM cannot run inside a transaction. Run it on its own (sluice sees it as foreign DDL, at the cost of one check per projection at the next sync)',
};

export class AlterRefusedError extends SluiceError {
  constructor(message: string, options: { readonly cause?: unknown } = {}) {
    super('ALTER_REFUSED', message, options);
    this.name = 'AlterRefusedError';
  }
}

/** One line naming a statement: its position and its start. */
export function statementLabel(index: number, text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return `statement ${index} (${flat.length > 80 ? `${flat.slice(0, 77)}...` : flat})`;
}

/** Throws AlterRefusedError when `text` is one of the statements alter never runs. */
export function checkStatement(db: string, index: number, text: string): void {
  const [first = '', second = ''] = leadingKeywords(text, 2);
  const label = statementLabel(index, text);
  const why = REFUSED[first];
  if (why !== undefined) throw new AlterRefusedError(`sluice alter ${db}: ${label} is refused: ${why(first)}. Nothing was changed.`);
  if (first === 'CREATE' && (second === 'TEMP' || second === 'TEMPORARY'))
    throw new AlterRefusedError(
      `sluice alter ${db}: ${label} is refused: a TEMP object lives only as long as alter's own connection, so it would vanish at once. Make a table in the main database, or make the TEMP object in the connection that uses it. Nothing was changed.`,
    );
  if (text.toLowerCase().includes(PREFIX))
    throw new AlterRefusedError(
      `sluice alter ${db}: ${label} is refused: it names ${PREFIX}..., sluice's own objects (its journal, state and triggers), which alter changes itself and a script must not touch. To remove capture use sluice disable; to change retention use sluice enable --retention. Nothing was changed.`,
    );
}

/** The RAISE message of the guards alter puts on captured tables while the script runs. */
export const GUARD_MARK = 'sluice alter guard:';

export function guardRefusal(db: string, index: number, text: string, err: Error): AlterRefusedError {
  const table = err.message.slice(err.message.indexOf(GUARD_MARK) + GUARD_MARK.length).trim();
  return new AlterRefusedError(
    `sluice alter ${db}: ${statementLabel(index, text)} is refused: it writes rows of the captured table ${table} (directly or by a trigger), while alter has that table's capture triggers out of the way, so the writes would go unrecorded. Fix: run the data change on its own, before or after sluice alter (it is captured as usual); a table you rebuild (CREATE new, copy, DROP old, RENAME) may be written under its new name. Nothing was changed.`,
    { cause: err },
  );
}
