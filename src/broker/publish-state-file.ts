import fs from 'node:fs';
import { decodeCursor } from '../feed/index.ts';
import { InvalidInputError, type SluiceError } from '../errors.ts';
import { replaceFile } from '../export/index.ts';

/*
 * The publisher's position, in a small file next to the source
 * (`<db>.publish-<stream>.cursor`): the cursor of the last batch or snapshot
 * the broker acknowledged, replaced atomically after each ack. Not in the
 * source's _sluice_consumers row: publish, like export, only reads the source.
 */

/** Saves the position (after the broker's ack). */
export function writeStateFile(file: string, cursor: string): void {
  replaceFile(file, cursor);
}

/** The saved position, or undefined when there is none yet. */
export function readStateFile(file: string): string | undefined {
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8').trim();
  } catch {
    return undefined;
  }
  if (text === '') return undefined;
  try {
    decodeCursor(text);
  } catch (err) {
    throw new InvalidInputError(
      'PUBLISH_STATE_FILE',
      `Publish state file ${file} does not hold a sluice cursor (${(err as SluiceError).message ?? String(err)}). Delete it: publish then resumes from the stream's last batch.`,
      { cause: err },
    );
  }
  return text;
}
