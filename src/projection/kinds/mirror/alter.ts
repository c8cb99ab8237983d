import { hold, ownTables, type KindAlterRules } from '../../evolution/kinds.ts';

/** What classifying a change to a mirror projection needs (see projection/evolution/kinds.ts). */
export const mirrorAlter: KindAlterRules = {
  auxiliary: 'none: the target rows are the source rows',
  uses: () => true,
  diff: () => [],
  renameAuxiliary: hold('a mirror keeps no state but its rows'),
  usedColumnAuxiliary: hold('a mirror keeps no state but its rows'),
  shadow: ownTables,
};
