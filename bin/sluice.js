#!/usr/bin/env node
// The sluice CLI. Runs the compiled build (dist/, made by `npm run build`,
// which `npm ci` runs through `prepare`); falls back to the TypeScript
// sources through tsx when there is no build (a fresh checkout mid-edit).
import fs from 'node:fs';

const compiled = new URL('../dist/src/cli/main.js', import.meta.url);
let main;
if (fs.existsSync(compiled) && process.env.SLUICE_FROM_SOURCE === undefined) {
  ({ main } = await import(compiled.href));
} else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../src/cli/main.ts'));
}
process.exitCode = await main(process.argv);
