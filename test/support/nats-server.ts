import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';

/*
 * A real nats-server with JetStream for tests (never a mock): on a free
 * loopback port, with its store in a temp directory. It can be stopped
 * (SIGTERM), killed (SIGKILL) and started again on the same port and store,
 * so a test can take the broker away under a running publisher or subscriber,
 * or on the same port with a new, empty store (`restartEmpty`): a broker that
 * comes back without its streams and consumers.
 */

/** The server binary: NATS_SERVER, else nats-server on the PATH, else Debian's. */
function binary(): string {
  if (process.env.NATS_SERVER !== undefined) return process.env.NATS_SERVER;
  for (const dir of (process.env.PATH ?? '').split(path.delimiter)) {
    const f = path.join(dir, 'nats-server');
    if (dir !== '' && fs.existsSync(f)) return f;
  }
  return '/usr/sbin/nats-server';
}

/** A loopback TCP port no one listens on now. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.unref();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const addr = s.address();
      s.close(() => (typeof addr === 'object' && addr !== null ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

export class NatsServer {
  readonly port: number;
  #storeDir: string;
  /** The stores this object made (the first one, unless given, and each of restartEmpty), removed by dispose. */
  readonly #madeDirs: string[] = [];
  #child: ChildProcess | undefined;
  #log = '';
  /** More nats-server arguments (`--user u --pass p`: a server that requires them of every client). */
  readonly #args: readonly string[];

  private constructor(port: number, storeDir: string, ownsDir: boolean, args: readonly string[]) {
    this.port = port;
    this.#storeDir = storeDir;
    this.#args = args;
    if (ownsDir) this.#madeDirs.push(storeDir);
  }

  /**
   * Starts a server on a free port with a fresh store (or `storeDir`), and
   * waits until JetStream is ready. `config`: the text of a nats-server
   * configuration file (accounts and users, authorization, tls {...}),
   * written into a temp folder and passed with -c; the port, address and
   * store on the command line win over it.
   */
  static async start(options: { storeDir?: string; args?: readonly string[]; config?: string } = {}): Promise<NatsServer> {
    const dir = options.storeDir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-nats-'));
    const args = [...(options.args ?? [])];
    let configDir: string | undefined;
    if (options.config !== undefined) {
      configDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-nats-conf-'));
      const file = path.join(configDir, 'nats-server.conf');
      fs.writeFileSync(file, options.config);
      args.unshift('-c', file);
    }
    const server = new NatsServer(await freePort(), dir, options.storeDir === undefined, args);
    if (configDir !== undefined) server.#madeDirs.push(configDir);
    try {
      await server.restart();
    } catch (err) {
      await server.dispose();
      throw err;
    }
    return server;
  }

  /** The store directory the server runs (or last ran) on. */
  get storeDir(): string {
    return this.#storeDir;
  }

  get url(): string {
    return `nats://127.0.0.1:${this.port}`;
  }

  /** The server process's id while it runs (a bench reads its CPU time from /proc). */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get running(): boolean {
    return this.#child !== undefined;
  }

  /** What the server logged (for a failing test's message). */
  get log(): string {
    return this.#log;
  }

  /** Starts the server again on the same port and store (it must not be running). */
  async restart(): Promise<void> {
    if (this.#child !== undefined) throw new Error('nats-server is already running');
    const child = spawn(binary(), ['-js', '-sd', this.storeDir, '-a', '127.0.0.1', '-p', String(this.port), ...this.#args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.#child = child;
    let ready = false;
    const onData = (b: Buffer) => {
      this.#log += b.toString();
      if (this.#log.length > 200_000) this.#log = this.#log.slice(-100_000);
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.on('exit', () => {
      if (this.#child === child) this.#child = undefined;
    });
    const deadline = Date.now() + 20_000;
    const since = this.#log.length;
    while (!ready) {
      if (this.#child !== child) throw new Error(`nats-server exited at start:\n${this.#log.slice(since)}`);
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`nats-server did not get ready on port ${this.port}:\n${this.#log.slice(since)}`);
      }
      // "Server is ready" comes once the client port listens and JetStream has started.
      ready = this.#log.slice(since).includes('Server is ready') && (await accepts(this.port));
      if (!ready) await new Promise((r) => setTimeout(r, 25));
    }
  }

  /** Starts the server again on the same port with a new, empty store (it must not be running): every stream and consumer is gone. */
  async restartEmpty(): Promise<void> {
    if (this.#child !== undefined) throw new Error('nats-server is already running');
    this.#storeDir = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-nats-'));
    this.#madeDirs.push(this.#storeDir);
    await this.restart();
  }

  /** Stops the server (SIGTERM, then SIGKILL after 5 s) and waits for it to exit. */
  async stop(): Promise<void> {
    await this.#end('SIGTERM');
  }

  /** Kills the server at once (SIGKILL), as a crash would. */
  async kill(): Promise<void> {
    await this.#end('SIGKILL');
  }

  /** Stops the server and removes the store it made. */
  async dispose(): Promise<void> {
    await this.#end('SIGKILL');
    for (const d of this.#madeDirs) fs.rmSync(d, { recursive: true, force: true });
  }

  async #end(signal: NodeJS.Signals): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
    await exited;
    clearTimeout(timer);
    this.#child = undefined;
  }
}

function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.on('error', () => resolve(false));
  });
}
