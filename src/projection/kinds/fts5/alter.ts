import { fail, hold, json, ownTables, usesCopy, type KindAlterRules } from '../../evolution/kinds.ts';
import { type AlterChange } from '../../evolution/changes.ts';

/** What classifying a change to a fts5 projection needs (see projection/evolution/kinds.ts). */
export const fts5Alter: KindAlterRules = {
  auxiliary: "the FTS5 index contents (its tokens, built with its tokenizer) and its key table (the index's name followed by _src)",
  uses: usesCopy,
  diff(old, next) {
    const out: AlterChange[] = [];
    if (json(old.columns) !== json(next.columns))
      out.push({ kind: 'definition', code: 'ALTER_COLUMNS_CHANGED', field: 'columns', parts: ['rows', 'auxiliary'] });
    const o = old.definition as { content?: string; tokenize?: string };
    const n = next.definition as { content?: string; tokenize?: string };
    if (o.content !== n.content)
      out.push({ kind: 'definition', code: 'ALTER_FTS_OPTIONS_CHANGED', field: 'content', parts: ['rows', 'auxiliary'] });
    if (o.tokenize !== n.tokenize)
      out.push({ kind: 'definition', code: 'ALTER_FTS_OPTIONS_CHANGED', field: 'tokenize', parts: ['auxiliary'] });
    return out;
  },
  renameAuxiliary: hold('the FTS5 index is named by its target table, not by the projection'),
  usedColumnAuxiliary: fail('the FTS5 index holds tokens of the column as it was'),
  shadow: ownTables,
};
