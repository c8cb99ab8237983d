/**
 * An `ALTER TABLE [schema.]table RENAME [COLUMN] from TO to` statement, read
 * from its text: names unquoted as SQLite reads them ("x", [x], `x`, 'x' or
 * bare). Anything else, a table rename included, is undefined. The caller
 * checks the statement's effect on the table before it trusts this reading
 * (a misread one is then a dropped column and an added one, never a wrong
 * rename).
 *
 * @example
 * parseRenameColumn('ALTER TABLE "t" RENAME COLUMN a TO [b]'); // { table: 't', from: 'a', to: 'b' }
 */
export function parseRenameColumn(
  sql: string,
): { readonly schema?: string; readonly table: string; readonly from: string; readonly to: string } | undefined {
  const tokens = tokenize(sql);
  if (tokens === undefined) return undefined;
  while (tokens.at(-1)?.text === ';' && tokens.at(-1)?.bare === true) tokens.pop();
  const kw = (i: number, word: string) => tokens[i]?.bare === true && tokens[i]?.text.toUpperCase() === word;
  if (!kw(0, 'ALTER') || !kw(1, 'TABLE')) return undefined;
  let i = 2;
  const first = tokens[i];
  if (first === undefined || !isName(first)) return undefined;
  let schema: string | undefined;
  let table = first.text;
  if (tokens[i + 1]?.bare === true && tokens[i + 1]?.text === '.') {
    const second = tokens[i + 2];
    if (second === undefined || !isName(second)) return undefined;
    schema = table;
    table = second.text;
    i += 2;
  }
  i++;
  if (!kw(i, 'RENAME')) return undefined;
  const rest = tokens.slice(i + 1);
  const names = rest.length === 4 && kw(i + 1, 'COLUMN') ? rest.slice(1) : rest.length === 3 ? rest : undefined;
  if (names === undefined) return undefined;
  const [from, to, after] = [names[0], names[1], names[2]];
  if (from === undefined || after === undefined || to?.bare !== true || to.text.toUpperCase() !== 'TO') return undefined;
  if (!isName(from) || !isName(after)) return undefined;
  return { ...(schema === undefined ? {} : { schema }), table, from: from.text, to: after.text };
}

interface Token {
  readonly text: string;
  /** False for a quoted name (its quotes removed and escapes undone). */
  readonly bare: boolean;
}

const isName = (t: Token) => !t.bare || /^[A-Za-z_\u0080-\uffff][A-Za-z0-9_$\u0080-\uffff]*$/.test(t.text);

/** The statement's tokens (comments and white space left out), or undefined for text this reader does not know. */
function tokenize(sql: string): Token[] | undefined {
  const out: Token[] = [];
  let i = 0;
  const close: Record<string, string> = { '"': '"', '`': '`', "'": "'", '[': ']' };
  while (i < sql.length) {
    const ch = sql[i] as string;
    if (/\s/.test(ch)) {
      i++;
    } else if (ch === '-' && sql[i + 1] === '-') {
      const nl = sql.indexOf('\n', i);
      i = nl < 0 ? sql.length : nl + 1;
    } else if (ch === '/' && sql[i + 1] === '*') {
      const end = sql.indexOf('*/', i + 2);
      i = end < 0 ? sql.length : end + 2;
    } else if (ch in close) {
      const q = close[ch] as string;
      let text = '';
      let j = i + 1;
      for (;;) {
        if (j >= sql.length) return undefined;
        if (sql[j] === q) {
          // A doubled quote inside is one quote character (not inside [...]).
          if (q !== ']' && sql[j + 1] === q) {
            text += q;
            j += 2;
            continue;
          }
          break;
        }
        text += sql[j];
        j++;
      }
      out.push({ text, bare: false });
      i = j + 1;
    } else {
      const m = /^[A-Za-z0-9_$\u0080-\uffff]+/.exec(sql.slice(i));
      const text = m === null ? ch : m[0];
      out.push({ text, bare: true });
      i += text.length;
    }
  }
  return out;
}
