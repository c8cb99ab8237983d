import { Command, CommanderError } from 'commander';
import { reportError } from './output.ts';
import { namingLockedFile } from './busy.ts';
import { namingDamagedCapture } from './capture-damaged.ts';
import { namingUnwritable } from './not-writable.ts';
import { stderr, stdout } from './closed-pipe.ts';

type Register = (program: Command) => void;

/*
 * Each command's module, in the order `--help` lists them, loaded only when
 * needed: a run loads the command it runs (and what that imports), not the
 * others' (prom-client for --metrics, the progress bar, the demo's steps...),
 * which is a good part of the start-up every command pays. `--help`, `help`,
 * no command or an unknown one loads them all (the help lists each, and
 * commander suggests the nearest name).
 */
const COMMANDS: Readonly<Record<string, () => Promise<Register>>> = {
  init: async () => (await import('./init.ts')).registerInit,
  enable: async () => (await import('./enable.ts')).registerEnable,
  disable: async () => (await import('./disable.ts')).registerDisable,
  bump: async () => (await import('./bump.ts')).registerBump,
  alter: async () => (await import('./alter.ts')).registerAlter,
  status: async () => (await import('./status.ts')).registerStatus,
  changes: async () => (await import('./changes.ts')).registerChanges,
  prune: async () => (await import('./prune.ts')).registerPrune,
  sync: async () => (await import('./sync.ts')).registerSync,
  verify: async () => (await import('./verify.ts')).registerVerify,
  explain: async () => (await import('./explain.ts')).registerExplain,
  plan: async () => (await import('./plan.ts')).registerPlan,
  export: async () => (await import('./export.ts')).registerExport,
  import: async () => (await import('./import.ts')).registerImport,
  publish: async () => (await import('./publish.ts')).registerPublish,
  subscribe: async () => (await import('./subscribe.ts')).registerSubscribe,
  health: async () => (await import('./health.ts')).registerHealth,
  run: async () => (await import('./run.ts')).registerRun,
  drop: async () => (await import('./drop.ts')).registerDrop,
  reinit: async () => (await import('./reinit.ts')).registerReinit,
  protect: async () => (await import('./protect.ts')).registerProtect,
  forget: async () => (await import('./forget.ts')).registerForget,
  query: async () => (await import('./query.ts')).registerQuery,
  strip: async () => (await import('./strip.ts')).registerStrip,
  demo: async () => (await import('./demo.ts')).registerDemo,
};

/** The program with the command named `only` (argv's first word) if there is one by that name, else with every command. */
export async function buildProgram(only?: string): Promise<Command> {
  const program = new Command('sluice')
    .description('Change-data-capture and projections for SQLite.')
    .version('0.1.0')
    .showHelpAfterError('(run with --help for usage)')
    // Help and usage errors go through the streams guarded against a closed pipe (`sluice sync --help | head -1`); commands made below inherit it.
    .configureOutput({ writeOut: (text) => stdout().write(text), writeErr: (text) => stderr().write(text) })
    .exitOverride();
  const names = only !== undefined && Object.hasOwn(COMMANDS, only) ? [only] : Object.keys(COMMANDS);
  const registers = await Promise.all(names.map((n) => (COMMANDS[n] as () => Promise<Register>)()));
  for (const register of registers) register(program);
  for (const c of program.commands) c.exitOverride();
  return program;
}

/** Each turns an error SQLite or Node raised without naming the file into one that names it, or leaves it as it is. */
const NAMING = [namingLockedFile, namingDamagedCapture, namingUnwritable] as const;

/** Runs the CLI and returns the exit code: 0 ok, 1 error, 2 usage, 3 needs action. */
export async function main(argv: readonly string[]): Promise<number> {
  const json = argv.includes('--json');
  let program: Command | undefined;
  try {
    program = await buildProgram(argv[2]);
    await program.parseAsync([...argv]);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) {
      if (err.code === 'commander.helpDisplayed' || err.code === 'commander.version' || err.code === 'commander.help') return 0;
      return 2; // commander already printed the message naming the flag or argument
    }
    // SQLite's errors that name no file (a lock, a capture table dropped by hand, a file it may not write), named after the file the user gave.
    const command = program?.commands.find((c) => c.name() === argv[2]);
    return reportError(
      NAMING.reduce<unknown>((e, naming) => naming(e, command), err),
      { json },
    );
  }
}
