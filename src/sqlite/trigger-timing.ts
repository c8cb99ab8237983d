/*
 * When a trigger fires relative to its statement, read from its CREATE
 * TRIGGER text (no pragma tells). Only the head of the statement is
 * tokenized: CREATE [TEMP|TEMPORARY] TRIGGER [IF NOT EXISTS] [schema.]name
 * [BEFORE | AFTER | INSTEAD OF]; a missing timing means BEFORE.
 */

type TriggerTiming = 'BEFORE' | 'AFTER' | 'INSTEAD OF';

/** The first `limit` tokens of SQL text: words and quoted names, with comments and blanks skipped. */
function headTokens(sql: string, limit: number): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < sql.length && out.length < limit) {
    const ch = sql[i] as string;
    if (/\s/.test(ch)) {
      i++;
    } else if (sql.startsWith('--', i)) {
      const end = sql.indexOf('\n', i);
      i = end < 0 ? sql.length : end + 1;
    } else if (sql.startsWith('/*', i)) {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? sql.length : end + 2;
    } else if (ch === '"' || ch === '`' || ch === "'" || ch === '[') {
      const close = ch === '[' ? ']' : ch;
      let j = i + 1;
      for (;;) {
        const k = sql.indexOf(close, j);
        if (k < 0) {
          j = sql.length;
          break;
        }
        // A doubled quote is an escaped quote ([...] has no escape).
        if (close !== ']' && sql[k + 1] === close) {
          j = k + 2;
          continue;
        }
        j = k + 1;
        break;
      }
      out.push(`"${sql.slice(i + 1, j - 1)}"`); // quoted: never a keyword
      i = j;
    } else {
      const m = /^[A-Za-z0-9_$\u0080-\uffff]+/.exec(sql.slice(i, i + 256));
      if (m === null) {
        out.push(ch);
        i++;
      } else {
        out.push(m[0].toUpperCase());
        i += m[0].length;
      }
    }
  }
  return out;
}

/** The timing of a trigger from its SQL; 'AFTER' when the text cannot be read (the conservative answer for sluice's ordering rule). */
export function triggerTiming(sql: string): TriggerTiming {
  const t = headTokens(sql, 12);
  let i = 0;
  const take = (word: string) => (t[i] === word ? (i++, true) : false);
  if (!take('CREATE')) return 'AFTER';
  if (!take('TEMP')) take('TEMPORARY');
  if (!take('TRIGGER')) return 'AFTER';
  if (t[i] === 'IF' && t[i + 1] === 'NOT' && t[i + 2] === 'EXISTS') i += 3;
  if (t[i] === undefined) return 'AFTER';
  i++; // the name (or schema)
  if (t[i] === '.') i += 2;
  if (take('BEFORE')) return 'BEFORE';
  if (take('AFTER')) return 'AFTER';
  if (take('INSTEAD')) return 'INSTEAD OF';
  if (t[i] === 'INSERT' || t[i] === 'UPDATE' || t[i] === 'DELETE') return 'BEFORE';
  return 'AFTER';
}
