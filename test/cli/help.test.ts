// every command has help with an example
import { test, expect, describe } from '../support/fixtures.ts';
import { buildProgram } from '../../src/cli/index.ts';
import { runCliAsync, mapLimit } from './support/cli.ts';

/** The commands docs/cli.md lists. */
const COMMANDS = [
  'init',
  'enable',
  'disable',
  'bump',
  'alter',
  'status',
  'changes',
  'prune',
  'sync',
  'verify',
  'explain',
  'plan',
  'export',
  'import',
  'publish',
  'subscribe',
  'health',
  'run',
  'drop',
  'forget',
  'reinit',
  'query',
  'strip',
  'protect',
  'demo',
] as const;

describe('--help', () => {
  test('the program registers exactly the documented commands', async () => {
    expect((await buildProgram()).commands.map((c) => c.name()).sort()).toEqual([...COMMANDS].sort());
  });

  test('every command prints usage with an example and exits 0', async () => {
    const results = await mapLimit(COMMANDS, 4, async (cmd) => ({ cmd, r: await runCliAsync([cmd, '--help']) }));
    for (const { cmd, r } of results) {
      expect(r.status, `${cmd} --help: ${r.stderr}`).toBe(0);
      expect(r.stdout, cmd).toContain(`Usage: sluice ${cmd}`);
      expect(r.stdout, cmd).toMatch(/\nExamples?:\n\s+\$ sluice /);
      // The example runs the command it documents.
      expect(r.stdout, cmd).toContain(`$ sluice ${cmd}`);
      expect(r.stdout, cmd).toContain('--json');
      expect(r.stderr, cmd).toBe('');
    }
  });

  test('the top-level help lists every command and exits 0', async () => {
    const r = await runCliAsync(['--help']);
    expect(r.status, r.stderr).toBe(0);
    for (const cmd of COMMANDS) expect(r.stdout).toMatch(new RegExp(`\\n  ${cmd} `));
  });
});
