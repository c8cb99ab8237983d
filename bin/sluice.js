#!/usr/bin/env node
// Runs the TypeScript CLI through tsx so that `npx sluice` works straight after `npm ci`.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv);
