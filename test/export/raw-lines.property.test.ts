// an export file's lines, read as bytes, split and decode as readline read them, and a held line's seq is read exactly
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import fc from 'fast-check';
import { test, expect } from '../support/fixtures.ts';
import { FileLines, lineText, eventPrefix, eventSeqOf, isRowLineOf, rowPrefix } from '../../src/export/index.ts';

/*
 * The checking reader used to read a file with readline (crlfDelay:
 * Infinity) and digest each line's text; it now reads bytes (raw-lines.ts).
 * Whatever a file holds (line ends of every kind, bytes that are not UTF-8,
 * lines longer than one read, no newline at the end), the lines must be
 * readline's, each line's bytes its text's UTF-8 with one newline, and its
 * text readline's. (Where a line is not UTF-8, readline's decoder, fed the
 * file in chunks, may put another number of U+FFFD than the line decoded
 * whole, and drops an incomplete sequence the file ends with: such a line's
 * digest cannot match what an exporter wrote anyway.)
 */

async function viaReadline(file: string): Promise<string[]> {
  const rl = readline.createInterface({ input: fs.createReadStream(file), crlfDelay: Infinity });
  const out: string[] = [];
  for await (const l of rl) out.push(l);
  return out;
}

async function viaBytes(file: string): Promise<{ texts: string[]; bytes: Buffer[] }> {
  const texts: string[] = [];
  const bytes: Buffer[] = [];
  for await (const group of new FileLines(file).groups()) {
    for (const raw of group) {
      texts.push(lineText(raw));
      bytes.push(Buffer.from(raw)); // (a copy: the group's buffer is read into again)
    }
  }
  return { texts, bytes };
}

const piece = fc.oneof(
  { arbitrary: fc.constantFrom('\n', '\r\n', '\r', '\r\r\n', '\n\n', '{', '}', ' ', '\t'), weight: 3 },
  { arbitrary: fc.string({ unit: 'grapheme', maxLength: 20 }), weight: 4 },
  { arbitrary: fc.uint8Array({ maxLength: 6 }).map((b) => Buffer.from(b).toString('latin1')), weight: 1 },
  // A line longer than one read (64 KiB) now and then.
  { arbitrary: fc.constantFrom('x'.repeat(70_000), 'é'.repeat(40_000)), weight: 1 },
);

test('lines, their texts and their bytes are those readline gives, for any bytes', async ({ tmp }) => {
  const file = path.join(tmp, 'lines.jsonl');
  await fc.assert(
    fc.asyncProperty(fc.array(fc.tuple(piece, fc.boolean()), { maxLength: 40 }), async (parts) => {
      // Each piece as UTF-8, or (the flag) as raw latin1 bytes, so that some lines are not UTF-8.
      fs.writeFileSync(file, Buffer.concat(parts.map(([p, raw]) => Buffer.from(p, raw ? 'latin1' : 'utf8'))));
      const want = await viaReadline(file);
      const got = await viaBytes(file);
      // readline drops the incomplete UTF-8 sequence a file ends with, unterminated (its decoder is never flushed): a last line of only such bytes is no line to it.
      const dropped = got.texts.length === want.length + 1 && /^\uFFFD+$/.test(got.texts.at(-1) ?? '');
      expect(dropped ? got.texts.length - 1 : got.texts.length).toBe(want.length);
      want.forEach((t, i) => {
        const b = got.bytes[i] as Buffer;
        expect(b[b.length - 1]).toBe(0x0a);
        // A line that is UTF-8 (its bytes are its text's): the same text as readline's.
        if (b.equals(Buffer.from(`${got.texts[i] as string}\n`))) expect(got.texts[i]).toBe(t);
        else expect(t.includes('\uFFFD') || i === want.length - 1).toBe(true);
      });
    }),
    { numRuns: 150 },
  );
});

test("a held event line's seq is read from its bytes exactly, or not at all", () => {
  const p = eventPrefix('src-1');
  const line = (seq: string, rest = ',"table":"t"}') => Buffer.from(`{"sourceId":"src-1","seq":${seq}${rest}\n`);
  expect(eventSeqOf(line('1'), p)).toBe(1);
  expect(eventSeqOf(line('9007199254740'), p)).toBe(9007199254740);
  expect(eventSeqOf(line('123456789012345'), p)).toBe(123456789012345);
  // Parsed in full instead: a leading zero, 16 digits, no digits, a fraction, the line not closed, another source.
  for (const b of [
    line('012'),
    line('1234567890123456'),
    line(''),
    line('1.5'),
    line('12e3'),
    line('7', ',"table":"t"} '),
    line('7', ',"table":"t"'),
    Buffer.from('{"sourceId":"src-2","seq":7,"table":"t"}\n'),
    Buffer.from('{"seq":7,"sourceId":"src-1","table":"t"}\n'),
    Buffer.from('{ "sourceId":"src-1","seq":7,"table":"t"}\n'),
  ])
    expect(eventSeqOf(b, p), b.toString()).toBeUndefined();
  // Text lines (a broker's) read the same.
  expect(eventSeqOf('{"sourceId":"src-1","seq":42,"table":"t"}', p)).toBe(42);
  expect(eventSeqOf('{"sourceId":"src-1","seq":042,"table":"t"}', p)).toBeUndefined();
});

test('a held row line is known by its source, seq and table, written as the exporter writes them', () => {
  const p = rowPrefix('s"1', 30, 'ta\u00e9ble');
  const row = (prefix: string, end = '"id":1}}') => Buffer.from(`${prefix}${end}\n`);
  const exact = `{"type":"row","sourceId":${JSON.stringify('s"1')},"seq":30,"table":${JSON.stringify('ta\u00e9ble')},"row":{`;
  expect(isRowLineOf(row(exact), p)).toBe(true);
  expect(isRowLineOf(row(exact, '}}'), p)).toBe(true);
  expect(isRowLineOf(row(exact, '"id":1}'), p)).toBe(false);
  expect(isRowLineOf(row(exact.replace('"seq":30', '"seq":31')), p)).toBe(false);
  expect(isRowLineOf(row(exact.replace('ta\u00e9ble', 'ta\\u00e9ble')), p)).toBe(false);
  expect(isRowLineOf(row(exact.replace('"type":"row",', '"type": "row",')), p)).toBe(false);
});
