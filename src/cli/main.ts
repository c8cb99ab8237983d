import { Command, CommanderError } from 'commander';
import { reportError } from './output.ts';
import { registerEnable } from './enable.ts';
import { registerDisable } from './disable.ts';
import { registerBump } from './bump.ts';
import { registerAlter } from './alter.ts';
import { registerStatus } from './status.ts';
import { registerDemo } from './demo.ts';
import { registerChanges } from './changes.ts';
import { registerPrune } from './prune.ts';
import { registerSync } from './sync.ts';
import { registerVerify } from './verify.ts';
import { registerExport } from './export.ts';
import { registerImport } from './import.ts';
import { registerPublish } from './publish.ts';
import { registerSubscribe } from './subscribe.ts';
import { registerQuery } from './query.ts';
import { registerStrip } from './strip.ts';
import { registerHealth } from './health.ts';
import { registerExplain } from './explain.ts';
import { registerDrop } from './drop.ts';
import { registerReinit } from './reinit.ts';
import { registerForget } from './forget.ts';

export function buildProgram(): Command {
  const program = new Command('sluice')
    .description('Change-data-capture and projections for SQLite.')
    .version('0.1.0')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  for (const register of [
    registerEnable,
    registerDisable,
    registerBump,
    registerAlter,
    registerStatus,
    registerChanges,
    registerPrune,
    registerSync,
    registerVerify,
    registerExplain,
    registerExport,
    registerImport,
    registerPublish,
    registerSubscribe,
    registerHealth,
    registerDrop,
    registerReinit,
    registerForget,
    registerQuery,
    registerStrip,
    registerDemo,
  ])
    register(program);
  for (const c of program.commands) c.exitOverride();
  return program;
}

/** Runs the CLI and returns the exit code: 0 ok, 1 error, 2 usage, 3 needs action. */
export async function main(argv: readonly string[]): Promise<number> {
  const program = buildProgram();
  const json = argv.includes('--json');
  try {
    await program.parseAsync([...argv]);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      return 2; // commander already printed the message naming the flag or argument
    }
    return reportError(err, { json });
  }
}
