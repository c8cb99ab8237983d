import { Option, type Command } from 'commander';
import { errorCode, SluiceError } from '../index.ts';
import { errorMessage, Runner, RunLog, type LogFormat } from '../internal.ts';
import { stderr } from './closed-pipe.ts';
import { takeEarlySignals } from './interrupt.ts';
import { ExitSignal } from './output.ts';

export function registerRun(program: Command): void {
  program
    .command('run')
    .description(
      'Keep a pipeline file (sluice.yml) true: enable its capture, build and follow every declared target, serve /healthz, /metrics and a status page on "listen"; reload on SIGHUP or a change to the file, stop on SIGTERM/SIGINT.',
    )
    .option('--config <file>', 'the pipeline file', 'sluice.yml')
    .addOption(
      new Option('--log <format>', 'one line per event on stderr: readable text, or one JSON object per line')
        .choices(['text', 'json'])
        .default('text'),
    )
    .addHelpText(
      'after',
      "\nExamples:\n  $ sluice run                          # ./sluice.yml\n  $ sluice run --config /etc/sluice/app.yml --log json\n  $ curl -s http://127.0.0.1:9464/healthz   # the JSON of health --config FILE --json, plus the process's parts\n\nSIGHUP (or a change to the file, or to a definition file it names) reloads; a file that no longer loads keeps the running pipeline and turns /healthz 503.",
    )
    .action(async (opts: { config: string; log: LogFormat }) => {
      const log = new RunLog(opts.log, (line) => stderr().write(line));
      // Trapped before the start: a SIGTERM while the parts start stops them once started, exit 0.
      const signal = new Promise<string>((resolve) => {
        process.once('SIGINT', () => resolve('SIGINT'));
        process.once('SIGTERM', () => resolve('SIGTERM'));
      });
      // SIGHUP too (systemctl reload may send it while run starts, and its default action ends the process): a reload once started.
      let started: Runner | undefined = undefined;
      let hupWhileStarting = false;
      const onHup = () => {
        if (started === undefined) hupWhileStarting = true;
        else void started.reload('SIGHUP');
      };
      if (process.platform !== 'win32') process.on('SIGHUP', onHup);
      // Those that came while the CLI loaded (bin/sluice.js traps them from its first line). A SIGHUP then is no
      // reload: the file is not read yet, and the start reads it. A SIGTERM or SIGINT ends run before it starts
      // anything (no lock taken, nothing enabled, no target opened): exit 0, as once started.
      const early = takeEarlySignals().find((s) => s !== 'SIGHUP');
      if (early !== undefined) {
        log.event('info', 'run', 'stopped', `${early} before the start: nothing was started`);
        return;
      }
      const runner = await Runner.start(opts.config, log).catch((err: unknown) => {
        process.off('SIGHUP', onHup);
        if (opts.log !== 'json') throw err;
        // A log collector reads stderr as JSON lines only (docs/deploy.md): why the run cannot start is one of them.
        const raw = errorCode(err);
        const code = typeof raw === 'string' ? raw : 'INTERNAL';
        log.event('error', 'run', 'failed', `${code}: ${errorMessage(err) ?? String(err)}`, { code });
        throw new ExitSignal(err instanceof SluiceError ? err.exitCode : 1);
      });
      started = runner;
      if (hupWhileStarting) void runner.reload('SIGHUP');
      const received = await signal;
      process.off('SIGHUP', onHup);
      await runner.stop(received);
    });
}
