/*
 * Writes docs/reasons.md from the catalog in src/reasons.ts:
 *   npx tsx scripts/reasons-doc.ts
 * test/repo/reason-catalog.test.ts fails while the file differs from what this renders.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { DEFAULT_REPAIR, REASON_KINDS, REASONS, RETIRED_CODES, type ReasonCode, type ReasonInfo } from '../src/reasons.ts';

export const REASONS_DOC = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'docs', 'reasons.md');

/** Markdown text: the characters that would format or break a table cell, escaped. */
function text(s: string): string {
  return s.replace(/[\\|<>*_]/g, (c) => `\\${c}`);
}

export function renderReasons(): string {
  const kinds = Object.entries(REASON_KINDS).map(([k, what]) => `- \`${k}\`: ${what}`);
  const rows = (Object.keys(REASONS) as ReasonCode[]).map((code) => {
    const r: ReasonInfo = REASONS[code];
    const repair = r.repair === null ? '' : `\`${r.repair.replaceAll('|', '\\|')}\``;
    return `| \`${code}\` | ${r.kinds.join(', ')} | ${r.clears ? 'yes' : 'no'} | ${text(r.explain)} | ${repair} |`;
  });
  const retired = [...RETIRED_CODES].map(([old, now]) => `| \`${old}\` | \`${now}\` |`);
  return [
    '# Reason codes',
    '',
    '<!-- Generated from src/reasons.ts by `npx tsx scripts/reasons-doc.ts`: edit the catalog, not this file. -->',
    '',
    `Every stable code sluice reports (${rows.length} of them): the \`code\` of a SluiceError, the \`reason\` of a cursor that cannot continue, of a`,
    'projection sync rebuilt or suspended, of a table that is not armed, and of a projection verify did not call ok.',
    '',
    'Kinds (a code can have several):',
    '',
    ...kinds,
    '',
    '"Clears" says no repair command is needed: sync rebuilds by itself, or looks at a suspension again each run, so removing',
    'its cause is enough. "Repair" is what `sluice health`, `sync` and `verify` print for a suspension, after `CODE: `;',
    '{source}, {target}, {projection} and {table} (its source table) are filled in. A suspension without a repair of its own gets the rebuild:',
    `\`${DEFAULT_REPAIR}\`. Errors carry their fix in their message.`,
    '',
    '| Code | Kinds | Clears | Explanation | Repair |',
    '| --- | --- | --- | --- | --- |',
    ...rows,
    '',
    '## Retired codes',
    '',
    'A code that is renamed keeps its old name as an alias for one release: the old name is never raised, and an object of',
    '`--json` that carries the new code lists the old name beside it in `aliases` (an error object:',
    '`{"error": {"code": "PROJECTION_NOT_FOUND", "message": "...", "aliases": ["UNKNOWN_PROJECTION"]}}`; a renamed `reason` gets',
    '`aliases` beside it the same way). A script that matched the old name can match `code` or `aliases` meanwhile. The next',
    "release drops the alias (src/reasons.ts: the entry's `replaces`).",
    '',
    ...(retired.length === 0 ? ['None.'] : ['| Retired code | Now |', '| --- | --- |', ...retired]),
    '',
  ].join('\n');
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  fs.writeFileSync(REASONS_DOC, renderReasons());
  console.log(`wrote ${REASONS_DOC}`);
}
