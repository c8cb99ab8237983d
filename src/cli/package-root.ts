import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/** The sluice package root (where package.json, bin/ and projections/ are), from src/ or dist/src/. */
export function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 6; i++) {
    if (fs.existsSync(path.join(dir, 'package.json')) && fs.existsSync(path.join(dir, 'bin', 'sluice.js'))) return dir;
    dir = path.dirname(dir);
  }
  throw new Error('cannot find the sluice package root');
}
