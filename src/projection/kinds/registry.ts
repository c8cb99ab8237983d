import type { CompiledProjection } from '../compiled.ts';
import type { KindName, ProjectionKind } from '../kind.ts';
import { mirrorKind } from './mirror/mirror.ts';
import { mapKind } from './map/map.ts';
import { fts5Kind } from './fts5/fts5.ts';
import { customKind } from './custom/custom.ts';

import type { KindAlterRules } from '../evolution/kinds.ts';

export { dropTemps } from './relational/apply.ts';

/**
 * Every projection kind, by name. A new kind is a folder under kinds/, one
 * line here, and its definition schema's line in schemas.ts (listed apart,
 * so that parsing a definition loads none of the kinds' code).
 */
export const KINDS = {
  mirror: mirrorKind,
  map: mapKind,
  fts5: fts5Kind,
  custom: customKind,
} as const satisfies { readonly [K in KindName]: ProjectionKind<K> };

/** A kind whose methods take any compiled projection: the one it is called with must be of that kind (kindOf gives it). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any -- K is any here: each kind takes projections of its own kind only (kindOf pairs them)
type AnyKind = ProjectionKind<any>;

/** The kind of a compiled projection. */
export function kindOf(p: CompiledProjection): AnyKind {
  return KINDS[p.kind];
}

/** The names of the kinds, in the registry's order. */
export const KIND_NAMES = Object.keys(KINDS) as readonly KindName[];

/** Whether `name` is a kind of this registry (a stored record's kind is read with it). */
export function isKindName(name: string): name is KindName {
  return Object.hasOwn(KINDS, name);
}

/** The kind named `name` (a stored record's kind), for what needs no compiled projection. */
export function kindNamed(name: string): AnyKind | undefined {
  return isKindName(name) ? KINDS[name] : undefined;
}

/** The alter rules of a kind (its `alter`), for a kind read back from a target (a string). */
export function kindRules(kind: string): KindAlterRules | undefined {
  return kindNamed(kind)?.alter;
}
