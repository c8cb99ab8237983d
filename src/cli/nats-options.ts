import fs from 'node:fs';
import { InvalidArgumentError, type Command } from 'commander';
import { InvalidInputError } from '../index.ts';
import { splitServers, urlLogin } from '../internal.ts';
import type { NatsAuth, NatsConnection, NatsTls } from '../broker/index.ts';

/*
 * The --nats* options of publish, subscribe and health (docs/cli.md,
 * "Connecting to NATS"): the servers, how to log in and TLS. A secret is
 * never an argument, which `ps` shows to every user of the machine: a
 * password or token comes from a file or the environment
 * (SLUICE_NATS_PASSWORD, SLUICE_NATS_TOKEN). A URL with user:password@ in
 * it still works, as before (docs say `ps` shows it).
 */

export interface NatsCliOptions {
  nats?: string[];
  natsCreds?: string;
  natsUser?: string;
  natsPasswordFile?: string;
  natsTokenFile?: string;
  natsTlsCa?: string;
  natsTlsCert?: string;
  natsTlsKey?: string;
}

/** `--nats URL` repeated, or a comma list: every server of the cluster. A value that names none (`--nats ""`, an unset variable) is a usage error. */
function servers(value: string, previous: string[] | undefined): string[] {
  const given = splitServers(value);
  if (given.length === 0)
    throw new InvalidArgumentError(
      `expected the URL of a NATS server (nats://HOST:4222), or a comma list of them, got ${JSON.stringify(value)}`,
    );
  return [...(previous ?? []), ...given];
}

/**
 * `--stream NAME`: a JetStream stream name, which NATS refuses empty or with
 * `.`, `*`, `>`, `/`, `\` or white space in it (a usage error here, before
 * anything is opened or connected).
 */
export function streamName(value: string): string {
  if (value === '' || /[.*>/\\\s]/.test(value))
    throw new InvalidArgumentError(
      `a stream name is not empty and has no . * > / \\ or white space (NATS refuses them), got ${JSON.stringify(value)}`,
    );
  return value;
}

/** Adds the --nats* options; `nats` describes --nats itself, required unless `optional`. */
export function addNatsOptions(command: Command, nats: { description: string; optional?: boolean }): Command {
  const what = `${nats.description}; repeat it or give a comma list for a cluster's servers`;
  if (nats.optional === true) command.option('--nats <url>', what, servers);
  else command.requiredOption('--nats <url>', what, servers);
  return command
    .option('--nats-creds <file>', 'log in with a .creds file (a user JWT and its nkey seed)')
    .option('--nats-user <name>', `log in as this user; the password comes from --nats-password-file or SLUICE_NATS_PASSWORD`)
    .option('--nats-password-file <file>', "the user's password, read from this file (never an argument: ps shows those)")
    .option('--nats-token-file <file>', `log in with the token in this file (or in SLUICE_NATS_TOKEN)`)
    .option('--nats-tls-ca <file>', "TLS: the CA that signed the server's certificate (PEM; default the system's)")
    .option('--nats-tls-cert <file>', 'TLS: a client certificate (PEM), for a server that verifies clients; with --nats-tls-key')
    .option('--nats-tls-key <file>', "TLS: the client certificate's key (PEM)");
}

/** A secret from a file: its text without the line end `echo secret > file` adds. */
function readSecret(file: string, what: string, flag: string): string {
  try {
    return fs.readFileSync(file, 'utf8').replace(/\r?\n$/, '');
  } catch (err) {
    throw new InvalidInputError(
      'BROKER_AUTH_FAILED',
      `The ${what} file ${file} (${flag}) cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'}). Correct the path, or give the ${what} in the environment (SLUICE_NATS_${what === 'password' ? 'PASSWORD' : 'TOKEN'}).`,
      { cause: err },
    );
  }
}

/** How to log in and TLS, from the options and the environment (a usage error for options that do not go together). */
export function natsAccess(
  opts: NatsCliOptions,
  command: Command,
  env: NodeJS.ProcessEnv = process.env,
): Pick<NatsConnection, 'auth' | 'tls'> {
  const given = [
    opts.natsCreds !== undefined && '--nats-creds',
    opts.natsUser !== undefined && '--nats-user',
    opts.natsTokenFile !== undefined && '--nats-token-file',
  ].filter((x): x is string => x !== false);
  if (given.length > 1) command.error(`error: options ${given.join(' and ')} are two ways to log in: give one`);
  if (opts.natsPasswordFile !== undefined && opts.natsUser === undefined)
    command.error('error: option --nats-password-file needs --nats-user, the user whose password the file holds');
  let auth: NatsAuth | undefined;
  if (opts.natsCreds !== undefined) auth = { creds: opts.natsCreds };
  else if (opts.natsUser !== undefined) {
    const fromEnv = env.SLUICE_NATS_PASSWORD;
    if (opts.natsPasswordFile === undefined && fromEnv === undefined)
      command.error(
        `error: option --nats-user ${JSON.stringify(opts.natsUser)} needs a password: --nats-password-file with a file that holds it, or SLUICE_NATS_PASSWORD in the environment`,
      );
    const password =
      opts.natsPasswordFile !== undefined ? readSecret(opts.natsPasswordFile, 'password', '--nats-password-file') : (fromEnv as string);
    auth = { user: opts.natsUser, password };
  } else if (opts.natsTokenFile !== undefined) auth = { token: readSecret(opts.natsTokenFile, 'token', '--nats-token-file') };
  else if (env.SLUICE_NATS_TOKEN !== undefined && env.SLUICE_NATS_TOKEN !== '') auth = { token: env.SLUICE_NATS_TOKEN };
  const tls: NatsTls = {
    ...(opts.natsTlsCa === undefined ? {} : { ca: opts.natsTlsCa }),
    ...(opts.natsTlsCert === undefined ? {} : { cert: opts.natsTlsCert }),
    ...(opts.natsTlsKey === undefined ? {} : { key: opts.natsTlsKey }),
  };
  return { ...(auth === undefined ? {} : { auth }), ...(Object.keys(tls).length === 0 ? {} : { tls }) };
}

/** The connection the options say: undefined without --nats (health then reads the URLs the target recorded). */
export function natsConnectionOf(opts: NatsCliOptions, command: Command, env: NodeJS.ProcessEnv = process.env): NatsConnection | undefined {
  if (opts.nats === undefined || opts.nats.length === 0) {
    natsAccess(opts, command, env); // its usage errors all the same
    return undefined;
  }
  // A URL that carries its login (user:password@, token@) is not overridden by SLUICE_NATS_TOKEN from the environment.
  const inUrl = opts.nats.some((u) => urlLogin(u) !== undefined);
  const { SLUICE_NATS_TOKEN: _token, ...rest } = env;
  return { servers: opts.nats, ...natsAccess(opts, command, inUrl ? rest : env) };
}
