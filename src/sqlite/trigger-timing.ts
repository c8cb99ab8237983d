/*
 * When a trigger fires relative to its statement, and the columns of an
 * UPDATE OF trigger, read from its CREATE TRIGGER text (no pragma tells).
 * Only the head of the statement is tokenized: CREATE [TEMP|TEMPORARY]
 * TRIGGER [IF NOT EXISTS] [schema.]name [BEFORE | AFTER | INSTEAD OF]
 * (DELETE | INSERT | UPDATE [OF column, ...]) ON; a missing timing means
 * BEFORE.
 */

type TriggerTiming = 'BEFORE' | 'AFTER' | 'INSTEAD OF';

/**
 * The first `limit` tokens of SQL text (up to and with the word `until`):
 * words (as written) and quoted names (`"name"`, their doubled quotes made
 * one), with comments and blanks skipped.
 */
function headTokens(sql: string, limit: number, until?: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < sql.length && out.length < limit && (until === undefined || out[out.length - 1]?.toUpperCase() !== until)) {
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
      const inner = sql.slice(i + 1, j - 1);
      out.push(`"${close === ']' ? inner : inner.replaceAll(close + close, close)}"`); // quoted: never a keyword
      i = j;
    } else {
      const m = /^[A-Za-z0-9_$\u0080-\uffff]+/.exec(sql.slice(i, i + 256));
      if (m === null) {
        out.push(ch);
        i++;
      } else {
        out.push(m[0]);
        i += m[0].length;
      }
    }
  }
  return out;
}

/** The tokens of a CREATE TRIGGER after its name, words upper-cased (`raw`: as written), or undefined when the text is not one. */
function afterName(raw: readonly string[]): { t: string[]; raw: string[] } | undefined {
  // A quoted name keeps its quotes: never a keyword.
  const t = raw.map((x) => x.toUpperCase());
  let i = 0;
  const take = (word: string) => (t[i] === word ? (i++, true) : false);
  if (!take('CREATE')) return undefined;
  if (!take('TEMP')) take('TEMPORARY');
  if (!take('TRIGGER')) return undefined;
  if (t[i] === 'IF' && t[i + 1] === 'NOT' && t[i + 2] === 'EXISTS') i += 3;
  if (t[i] === undefined) return undefined;
  i++; // the name (or schema)
  if (t[i] === '.') i += 2;
  return { t: t.slice(i), raw: raw.slice(i) };
}

/** The timing of a trigger from its SQL; 'AFTER' when the text cannot be read (the conservative answer for sluice's ordering rule). */
export function triggerTiming(sql: string): TriggerTiming {
  const t = afterName(headTokens(sql, 12))?.t;
  if (t === undefined) return 'AFTER';
  if (t[0] === 'BEFORE') return 'BEFORE';
  if (t[0] === 'AFTER') return 'AFTER';
  if (t[0] === 'INSTEAD') return 'INSTEAD OF';
  if (t[0] === 'INSERT' || t[0] === 'UPDATE' || t[0] === 'DELETE') return 'BEFORE';
  return 'AFTER';
}

/**
 * The columns an `UPDATE OF` trigger fires on, as written (a quoted name
 * unquoted; compare them with foldIdent); undefined for any other
 * trigger, or text that cannot be read as one.
 */
export function triggerUpdateOf(sql: string): string[] | undefined {
  const head = afterName(headTokens(sql, 10_000, 'ON'));
  if (head === undefined) return undefined;
  const { t, raw } = head;
  let i = t[0] === 'BEFORE' || t[0] === 'AFTER' ? 1 : t[0] === 'INSTEAD' ? 2 : 0;
  if (t[i] !== 'UPDATE' || t[i + 1] !== 'OF') return undefined;
  const columns: string[] = [];
  for (i += 2; i < t.length; i += 2) {
    const c = raw[i] as string;
    columns.push(c.startsWith('"') ? c.slice(1, -1) : c);
    if (t[i + 1] !== ',') break;
  }
  return t[i + 1] === 'ON' ? columns : undefined;
}
