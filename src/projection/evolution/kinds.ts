import { foldIdent } from '../../sqlite/index.ts';
import type { CompiledProjection } from '../compiled.ts';
import type { ProjectionDefinition } from '../definition.ts';
import { mentions, type AlterChange, type StatePart } from './changes.ts';

/*
 * What classifying a change needs to know of each kind of projection, in
 * the interface each kind fills in (its `alter`, in kinds/<kind>/alter.ts): which
 * source columns it reads, what its auxiliary state is, which definition
 * changes it can tell apart and what each touches, and whether sluice can
 * build a shadow of it for a protected rebuild.
 */

export type ProjectionKind = ProjectionDefinition['kind'];

export interface Proof {
  readonly holds: boolean;
  readonly why: string;
}

export interface KindAlterRules {
  /** What this kind keeps beside its rows (the auxiliary state of 003). */
  readonly auxiliary: string;
  /** Whether the projection's rows or auxiliary state depend on source column `column`. */
  uses(p: CompiledProjection, column: string): boolean;
  /** The kind's own definition changes between two compilations of one kind, source table and target table. */
  diff(old: CompiledProjection, next: CompiledProjection, oldFingerprint: string): AlterChange[];
  /** What a projection rename does to the auxiliary state. */
  readonly renameAuxiliary: Proof;
  /** What a change to a source column the projection reads does to the auxiliary state. */
  readonly usedColumnAuxiliary: Proof;
  /** Whether a shadow of it can be built and swapped in (a protected rebuild). */
  shadow(p: Pick<CompiledProjection, 'ownedTables'>): Proof;
}

export const hold = (why: string): Proof => ({ holds: true, why });
export const fail = (why: string): Proof => ({ holds: false, why });

export const usesCopy = (p: CompiledProjection, column: string) =>
  p.source.keyColumns.some((k) => foldIdent(k) === foldIdent(column)) ||
  p.columns.some((c) => (c.from !== undefined ? foldIdent(c.from) === foldIdent(column) : mentions(c.expr, column)));

export const json = (x: unknown) => JSON.stringify(x);

export const ownTables: KindAlterRules['shadow'] = (p) =>
  hold(`sluice owns its tables (${p.ownedTables.join(', ')}): a shadow of each is built beside them and swapped in`);

/** The state parts a definition change of `code` touches when the kinds differ or the target moves. */
export const ALL_PARTS: readonly StatePart[] = ['rows', 'cursor', 'keys', 'auxiliary'];
