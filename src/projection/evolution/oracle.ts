import { foldIdent } from '../../sqlite/index.ts';
import type { CompiledProjection } from '../compile.ts';
import { STATE_PARTS, type AlterChange, type StatePart } from './changes.ts';
import type { KindAlterRules, Proof } from './kinds.ts';
import type { AlterFacts } from './facts.ts';

/*
 * 003's AlterStateOracle: for each change, a proof per state part that the
 * change leaves it valid. classifyChange calls Compatible only what has all
 * four; a part with no proof, or a failed one, is affected.
 */

/** A proof for each state part a change leaves valid; a part left out is not proved. */
export type StateProof = Partial<Record<StatePart, Proof>>;

export interface OracleContext {
  readonly rules: KindAlterRules;
  readonly old: CompiledProjection | undefined;
  readonly next: CompiledProjection | undefined;
  readonly facts: AlterFacts;
}

/** Proves, part by part, that a change leaves a projection's state valid. */
export interface AlterStateOracle {
  prove(change: AlterChange, ctx: OracleContext): StateProof;
}

const hold = (why: string): Proof => ({ holds: true, why });
const fail = (why: string): Proof => ({ holds: false, why });

/** Every part proved, for a change that touches none of them. */
function untouched(why: string): StateProof {
  return { rows: hold(why), cursor: hold(why), keys: hold(why), auxiliary: hold(why) };
}

const CURSOR_BINDS_COLUMNS = fail(
  "a cursor binds its table's capture fingerprint, which covers the columns: the table is re-armed, a cursor made before does not continue (TABLE_REARMED), and journal images before the change have the old columns",
);

/**
 * The cursor across a change of its table's columns: valid only when sync's
 * own check of the cursor passes (facts.cursor, read as sync reads it:
 * validateCursor with acceptAlters), which needs the DDL to have run through
 * `sluice alter`, its recorded alters to explain the schema difference
 * exactly, and no event of the old layout to be left to read.
 */
function cursorAcrossColumns(facts: AlterFacts): Proof {
  const c = facts.cursor;
  if (c?.continues === true)
    return hold(
      'sluice alter recorded the DDL, which explains the change of the columns exactly, each name the projection reads still names the column it read, and no event of the old layout is left to read: the cursor continues (as sync checks it)',
    );
  return c === undefined ? CURSOR_BINDS_COLUMNS : fail(`the cursor does not continue (${c.reason}): ${c.message}`);
}

/**
 * The proofs sluice can give today, change by change. Anything it cannot
 * prove is left out (or failed, with why), so the change is not Compatible.
 */
export const DEFAULT_ORACLE: AlterStateOracle = {
  prove(c, { rules, old, next, facts }) {
    switch (c.kind) {
      case 'unchanged':
        return untouched(
          c.restated
            ? 'the definition is written differently but compiles to the same projection (columns, key, filter, target, source shape)'
            : 'the definition and the source shape it compiles against are unchanged',
        );
      case 'renamed': {
        const sameTarget = old !== undefined && next !== undefined && foldIdent(old.targetTable) === foldIdent(next.targetTable);
        return {
          rows: sameTarget
            ? hold(`the rows stay in ${next?.targetTable}: a name is a label`)
            : fail('the target table moves with the name'),
          cursor: hold('a cursor names the source and its tables, not the projection'),
          keys: hold('a rename changes no key column'),
          auxiliary: rules.renameAuxiliary,
        };
      }
      case 'target-index':
        return {
          rows: hold('an index holds no rows of its own; the table is unchanged'),
          cursor: hold('a target index is not part of the cursor'),
          keys: c.unique
            ? hold(
                "a user's UNIQUE index adds no key of the projection's: a batch it refuses suspends the projection (TARGET_CONSTRAINT), explicitly, and a rebuild makes it again or leaves it out and reports it (droppedIndexes)",
              )
            : hold('a non-UNIQUE index constrains no row'),
          auxiliary: hold('sluice keeps a user index across rebuilds (it makes it again)'),
        };
      case 'filter': {
        const n = facts.filterDisagreements;
        return {
          ...(n === 0
            ? { rows: hold('both filters select the same source rows at the cursor (counted: 0 rows differ)') }
            : n === undefined
              ? {}
              : { rows: fail(`the filters disagree on ${n} source rows`) }),
          cursor: hold('the filter reads the same source table'),
          keys: hold('the key columns are the same copies of the source key'),
          auxiliary: hold('a map keeps no state but its rows'),
        };
      }
      case 'source-column': {
        const why = c.used ? `the projection reads ${c.column}` : `the projection does not read ${c.column}`;
        return {
          ...(c.used ? { rows: fail(why) } : { rows: hold(`${why}: its columns, key and filter are unchanged`) }),
          cursor: cursorAcrossColumns(facts),
          keys: hold('the primary key is unchanged'),
          auxiliary: c.used ? rules.usedColumnAuxiliary : hold(why),
        };
      }
      case 'definition': {
        const proof: StateProof = {};
        for (const p of STATE_PARTS) proof[p] = c.parts.includes(p) ? fail(`${c.field} changed`) : hold(`a change of ${c.field} leaves it`);
        return proof;
      }
      case 'cursor':
        return {
          rows: hold('unchanged'),
          cursor: fail(`${c.reason}: ${c.message}`),
          keys: hold('unchanged'),
          auxiliary: hold('unchanged'),
        };
      case 'source-key':
      case 'source-table':
        return {
          cursor: CURSOR_BINDS_COLUMNS,
          rows: fail('row identities change'),
          keys: fail('the source key or rowid changed'),
          auxiliary: rules.usedColumnAuxiliary,
        };
      case 'added':
      case 'invalid':
      case 'target-table':
        return {};
    }
  },
};
