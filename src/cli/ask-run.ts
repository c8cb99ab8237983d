import fs from 'node:fs';
import os from 'node:os';
import type { Pipeline, RunningRun } from '../index.ts';
import { configProblems, partProblems, runHolding } from '../internal.ts';
import { runStatusOutput } from './json-schemas.ts';

/*
 * `health --config` beside a `sluice run` of the same file: the files say
 * what is built and how far behind, but only the process knows that a pass
 * of it has committed nothing for longer than maxPassMs (a handler that
 * never settles), that a part keeps failing, or that the file on disk no
 * longer loads in it. While a run holds the file's lock, health asks its
 * /healthz (at the file's `listen`) and says what that says, in its words.
 * A run that holds the file and does not answer there needs action too
 * (stopped, or its main thread wedged): health cannot vouch for it. A file
 * with no `listen` (or port 0) leaves nothing to ask: said as a note.
 */

/** How long the run's /healthz may take to answer (it answers from a cache, on a thread no target's work blocks). */
const ASK_MS = 2000;

/** The run holding `pipeline`'s file and what it says needs action; undefined when no run holds the file. */
export async function askRun(pipeline: Pipeline): Promise<RunningRun | undefined> {
  const holder = runHolding(pipeline.file);
  if (holder === undefined) return undefined;
  const pid = holder.pid ?? null;
  const who = `sluice run${pid === null ? '' : ` (pid ${pid})`}`;
  const unread = (note: string): RunningRun => ({ pid, healthz: null, parts: null, problems: [], note });
  const cannot = 'so what only that process knows (a stalled pass, a part failing, the file not loading in it) is not read here';
  if (holder.host !== undefined && holder.host !== os.hostname())
    return unread(`${who} holds ${pipeline.file} on host ${holder.host}: ask its /healthz there; ${cannot}`);
  const listen = pipeline.listen;
  if (listen === undefined)
    return unread(`${pipeline.file} declares no listen, ${cannot}; set "listen" to have /healthz and health --config read it`);
  if (listen.port === 0)
    return unread(
      `${pipeline.file} has listen port 0 (the port the system gave ${who} is not known here), ${cannot}; set a port in "listen"`,
    );
  const healthz = `http://${connectHost(listen.host)}:${listen.port}/healthz`;
  const failed = (why: string): RunningRun => ({
    pid,
    healthz,
    parts: null,
    problems: [
      `${who} holds ${pipeline.file}, and its /healthz at ${healthz} ${why}: whether a pass of it is stalled or a part failing is not known; look at its log, or restart it`,
    ],
  });
  let body: unknown;
  try {
    const res = await fetch(healthz, { signal: AbortSignal.timeout(ASK_MS), headers: { accept: 'application/json' } });
    body = await res.json();
  } catch (err) {
    const e = err as { name?: string; cause?: { code?: string } };
    return failed(e.name === 'TimeoutError' ? `did not answer within ${ASK_MS} ms` : `did not answer (${e.cause?.code ?? String(err)})`);
  }
  const status = runStatusOutput.safeParse(body);
  if (!status.success) return failed('answered with something that is not its status');
  const { run, config } = status.data;
  if ((pid !== null && run.pid !== pid) || !sameFile(config, pipeline.file))
    return failed(`answered for another process (pid ${run.pid}, running ${config})`);
  return { pid, healthz, parts: run.parts, problems: [...configProblems(config, run.configError), ...partProblems(run.parts)] };
}

/** Where to reach a server listening on `host`: any address (0.0.0.0, ::) is reached on loopback. */
function connectHost(host: string): string {
  if (host === '0.0.0.0' || host === '') return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

function sameFile(a: string, b: string): boolean {
  try {
    return fs.realpathSync(a) === fs.realpathSync(b);
  } catch {
    return a === b;
  }
}
