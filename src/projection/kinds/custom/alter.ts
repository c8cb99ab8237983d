import { fail, ownTables, type KindAlterRules } from '../../evolution/kinds.ts';
import { definitionFingerprint } from '../../definition-fingerprint.ts';
import type { ProjectionDefinition } from '../../definition.ts';

/** What classifying a change to a custom projection needs (see projection/evolution/kinds.ts). */
export const customAlter: KindAlterRules = {
  auxiliary: 'whatever its handler keeps in the target (sluice cannot see it)',
  // A handler gets every column of every event.
  uses: () => true,
  diff(old, next, oldFingerprint) {
    // The handler is code: only its declared version and module are known, through the fingerprint.
    const asOld = definitionFingerprint({ ...(next.definition as ProjectionDefinition), name: old.name }, old.source, undefined);
    return asOld === oldFingerprint ? [] : [{ kind: 'definition', code: 'ALTER_HANDLER_CHANGED', field: 'handler', parts: ['auxiliary'] }];
  },
  renameAuxiliary: fail('a handler is given the projection name (ctx.projection), and may keep its state by it'),
  usedColumnAuxiliary: fail("a handler's state is built from whole rows: nothing proves it fits the new columns"),
  shadow: (p) =>
    p.ownedTables.length > 0
      ? ownTables(p)
      : fail('its handler declares no tables of its own, so sluice cannot build a shadow beside them and swap it in'),
};
