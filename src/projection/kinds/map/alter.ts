import { hold, json, ownTables, usesCopy, type KindAlterRules } from '../../evolution/kinds.ts';
import { mentions, type AlterChange } from '../../evolution/changes.ts';

/** What classifying a change to a map projection needs (see projection/evolution/kinds.ts). */
export const mapAlter: KindAlterRules = {
  auxiliary: 'none: the target rows are computed from each source row alone',
  uses: (p, column) => usesCopy(p, column) || (p.filter !== null && mentions(p.filter, column)),
  diff(old, next) {
    const out: AlterChange[] = [];
    if (json(old.columns) !== json(next.columns))
      out.push({ kind: 'definition', code: 'ALTER_COLUMNS_CHANGED', field: 'columns', parts: ['rows'] });
    if (old.filter !== next.filter) out.push({ kind: 'filter', from: old.filter, to: next.filter });
    return out;
  },
  renameAuxiliary: hold('a map keeps no state but its rows'),
  usedColumnAuxiliary: hold('a map keeps no state but its rows'),
  shadow: ownTables,
};
