import type { ColumnOrigin } from '../../feed/index.ts';

/** What the stored cursor does on the source now (validateCursor, read-only). */
export type CursorFact =
  | { readonly continues: true }
  | {
      readonly continues: false;
      /** What sync rebuilds on (a `rebuilt` reason) or, when not rebuildable, the reason it suspends the projection with. */
      readonly reason: string;
      readonly message: string;
      readonly rebuildable: boolean;
    };

export interface AlterFacts {
  /** Undefined for a projection with no stored cursor. */
  readonly cursor?: CursorFact;
  /**
   * Source rows on which the stored and the new map filter disagree, counted
   * while the projection is current (no event of its table after its
   * cursor, so today's rows are the rows at the cursor). Undefined: not counted.
   */
  readonly filterDisagreements?: number;
  /** Indexes a user added to the projection's tables. */
  readonly targetIndexes?: readonly { readonly name: string; readonly table: string; readonly unique: boolean }[];
  /**
   * A table a build of the projection would make that exists in the target
   * and that the projection does not replace (sync's checkTablesFree): a
   * build is refused, TARGET_TABLE_EXISTS. Undefined: none.
   */
  readonly targetTableTaken?: { readonly table: string; readonly message: string };
  /** Bytes a shadow needs and bytes free on the target's file system, when known. */
  readonly space?: { readonly neededBytes: number; readonly freeBytes: number };
  /**
   * Which column each of the source table's columns is, as of the stored
   * cursor, by the alters sluice recorded since (feed/column-lineage.ts);
   * undefined when none was recorded (a column is then the one its name
   * named). A rename is followed only when it is here.
   */
  readonly columns?: readonly ColumnOrigin[];
}
