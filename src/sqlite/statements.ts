import type { Db } from './connection.ts';
import { TRANSACTION_KEYWORDS } from './transaction.ts';

/**
 * A script split into statements, one at a time, by the connection that
 * runs them: a `;` outside quotes and comments ends a statement unless
 * SQLite says the text so far is incomplete (a trigger body's `;`). Each
 * statement is prepared only when the ones before it have run, so it may
 * name what they made. `run` gets each statement's text and its
 * 1-based position; a statement that does not compile throws from
 * `db.prepare` inside `run`.
 */
export function forEachStatement(db: Db, sql: string, run: (text: string, index: number) => void): number {
  let start = 0;
  let index = 0;
  for (const candidate of [...statementEnds(sql), sql.length - 1]) {
    if (candidate < start) continue;
    const piece = sql.slice(start, candidate + 1);
    if (isBlank(piece)) {
      start = candidate + 1;
      continue;
    }
    // Grow the statement to the next `;` while SQLite calls it incomplete (the last piece runs as it is).
    if (candidate < sql.length - 1 && incomplete(db, piece)) continue;
    start = candidate + 1;
    index++;
    run(piece.trim(), index);
  }
  return index;
}

function incomplete(db: Db, piece: string): boolean {
  try {
    db.prepare(piece);
    return false;
  } catch (err) {
    return err instanceof Error && /incomplete input/.test(err.message);
  }
}

/** True for text that is only whitespace, comments and semicolons. */
export function isBlank(text: string): boolean {
  let rest = text;
  for (;;) {
    const next = stripLeading(rest).replace(/^;/, '');
    if (next === rest) return rest === '';
    rest = next;
  }
}

function stripLeading(text: string): string {
  return text.replace(/^(?:\s+|--[^\n]*(?:\n|$)|\/\*[\s\S]*?(?:\*\/|$))*/, '');
}

/** The statement's leading keywords, upper-cased, after whitespace and comments (up to `count`). */
export function leadingKeywords(sql: string, count = 2): string[] {
  const out: string[] = [];
  let rest = sql;
  while (out.length < count) {
    rest = stripLeading(rest);
    const m = /^[A-Za-z_]+/.exec(rest);
    if (m === null) break;
    out.push(m[0].toUpperCase());
    rest = rest.slice(m[0].length);
  }
  return out;
}

/** Offsets of every `;` outside string literals, quoted identifiers and comments. */
function statementEnds(sql: string): number[] {
  const ends: number[] = [];
  let i = 0;
  const closeOf: Record<string, string> = { "'": "'", '"': '"', '`': '`', '[': ']' };
  while (i < sql.length) {
    const ch = sql[i] as string;
    if (ch in closeOf) {
      const close = closeOf[ch] as string;
      i++;
      while (i < sql.length) {
        if (sql[i] === close) {
          // '' inside '...' (and "" inside "...") is an escaped quote.
          if (close !== ']' && sql[i + 1] === close) {
            i += 2;
            continue;
          }
          break;
        }
        i++;
      }
      i++;
    } else if (ch === '-' && sql[i + 1] === '-') {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? sql.length : nl + 1;
    } else if (ch === '/' && sql[i + 1] === '*') {
      const close = sql.indexOf('*/', i + 2);
      i = close < 0 ? sql.length : close + 2;
    } else {
      if (ch === ';') ends.push(i);
      i++;
    }
  }
  return ends;
}

/** Each of TRANSACTION_KEYWORDS with the same reason for refusing it. */
export function refuseTransactionControl<R>(why: R): Readonly<Record<(typeof TRANSACTION_KEYWORDS)[number], R>> {
  return Object.fromEntries(TRANSACTION_KEYWORDS.map((k) => [k, why])) as Record<(typeof TRANSACTION_KEYWORDS)[number], R>;
}
