import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawn, type ChildProcess } from 'node:child_process';
import type { Readable, Writable } from 'node:stream';

/*
 * A real headless Chromium (Debian's `chromium`, which .ci/run installs),
 * driven through its DevTools protocol over a pipe (--remote-debugging-pipe:
 * JSON messages ended by a NUL byte on file descriptors 3 and 4), which needs
 * no WebSocket client and no port. Nothing here is skipped: without the
 * browser, launchChromium fails and says how to install it.
 */

/** Where the browser is: $CHROMIUM, else Debian's /usr/bin/chromium, else `chromium` on the PATH. */
export function chromiumPath(): string {
  const candidates = [process.env['CHROMIUM'], '/usr/bin/chromium', '/usr/bin/chromium-browser'].filter(
    (c): c is string => c !== undefined && c !== '',
  );
  for (const c of candidates) if (fs.existsSync(c)) return c;
  for (const dir of (process.env['PATH'] ?? '').split(path.delimiter)) {
    const c = path.join(dir, 'chromium');
    if (dir !== '' && fs.existsSync(c)) return c;
  }
  throw new Error(
    'Chromium is not installed: the status page is tested in a real headless Chromium. Install it (apt-get install chromium, as .ci/run does) or set CHROMIUM to its path.',
  );
}

/** What a page reported that a test must see. */
export interface PageEvents {
  /** Console errors and assertions, uncaught exceptions, and every error the browser logged but the network's (a CSP violation is one). */
  readonly errors: string[];
  /** The browser's network errors: a load that failed or answered 4xx/5xx ("... status of 503 ... URL"). */
  readonly network: string[];
  /** Dialogs opened (alert, confirm, prompt), each accepted. */
  readonly dialogs: string[];
}

type Message = {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
  result?: unknown;
  error?: { message: string };
  sessionId?: string;
};

export class Chromium {
  private nextId = 1;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void; method: string }>();
  private readonly listeners: ((m: Message) => void)[] = [];
  private stderrTail = '';
  private exited: string | null = null;

  private constructor(
    private readonly child: ChildProcess,
    private readonly profile: string,
  ) {
    const input = child.stdio[4] as Readable;
    let buf = '';
    input.setEncoding('utf8');
    input.on('data', (chunk: string) => {
      buf += chunk;
      for (let i = buf.indexOf('\0'); i >= 0; i = buf.indexOf('\0')) {
        const m = JSON.parse(buf.slice(0, i)) as Message;
        buf = buf.slice(i + 1);
        this.dispatch(m);
      }
    });
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (s: string) => {
      this.stderrTail = (this.stderrTail + s).slice(-4000);
    });
    child.on('exit', (code, signal) => {
      this.exited = `chromium exited (${code ?? signal}); its stderr ended with:\n${this.stderrTail}`;
      for (const p of this.pending.values()) p.reject(new Error(`${p.method}: ${this.exited}`));
      this.pending.clear();
    });
  }

  /** Starts a headless Chromium with a fresh profile; close() ends it and removes the profile. */
  static async launch(): Promise<Chromium> {
    const exe = chromiumPath();
    const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-chromium-'));
    const child = spawn(
      exe,
      [
        '--headless',
        '--remote-debugging-pipe',
        // As root in a container there is no user namespace for the sandbox; the page is our own, served from loopback.
        '--no-sandbox',
        '--disable-gpu',
        '--disable-dev-shm-usage',
        '--no-first-run',
        '--no-default-browser-check',
        '--disable-extensions',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--mute-audio',
        `--user-data-dir=${profile}`,
        'about:blank',
      ],
      { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] },
    );
    const browser = new Chromium(child, profile);
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () => reject(new Error(`${exe} did not answer on its DevTools pipe within 60 s; its stderr:\n${browser.stderrTail}`)),
        60_000,
      );
    });
    try {
      await Promise.race([browser.send('Browser.getVersion'), late]);
    } catch (err) {
      await browser.close();
      throw err;
    } finally {
      clearTimeout(timer);
    }
    return browser;
  }

  send<T = Record<string, unknown>>(method: string, params: Record<string, unknown> = {}, sessionId?: string): Promise<T> {
    if (this.exited !== null) return Promise.reject(new Error(`${method}: ${this.exited}`));
    const id = this.nextId++;
    const msg = JSON.stringify({ id, method, params, ...(sessionId === undefined ? {} : { sessionId }) });
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject, method });
      (this.child.stdio[3] as Writable).write(`${msg}\0`);
    });
  }

  private dispatch(m: Message): void {
    if (m.id !== undefined) {
      const p = this.pending.get(m.id);
      this.pending.delete(m.id);
      if (m.error !== undefined) p?.reject(new Error(`${p.method}: ${m.error.message}`));
      else p?.resolve(m.result);
      return;
    }
    for (const l of this.listeners) l(m);
  }

  /** Opens a tab on `url`, recording its console errors, exceptions, failed loads and dialogs from the start. */
  async open(url: string): Promise<Page> {
    const { targetId } = await this.send<{ targetId: string }>('Target.createTarget', { url: 'about:blank' });
    const { sessionId } = await this.send<{ sessionId: string }>('Target.attachToTarget', { targetId, flatten: true });
    const events: PageEvents = { errors: [], network: [], dialogs: [] };
    this.listeners.push((m) => {
      if (m.sessionId !== sessionId || m.params === undefined) return;
      const p = m.params as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
      if (m.method === 'Runtime.consoleAPICalled' && (p['type'] === 'error' || p['type'] === 'assert'))
        events.errors.push(
          `console.${p['type']}: ${(p['args'] as { value?: unknown; description?: string }[]).map((a) => a.description ?? String(a.value)).join(' ')}`,
        );
      if (m.method === 'Runtime.exceptionThrown')
        events.errors.push(`uncaught: ${p['exceptionDetails']?.exception?.description ?? p['exceptionDetails']?.text}`);
      if (m.method === 'Log.entryAdded' && p['entry']?.level === 'error')
        (p['entry'].source === 'network' ? events.network : events.errors).push(
          `${p['entry'].source}: ${p['entry'].text} ${p['entry'].url ?? ''}`,
        );
      if (m.method === 'Page.javascriptDialogOpening') {
        events.dialogs.push(`${p['type']}: ${p['message']}`);
        void this.send('Page.handleJavaScriptDialog', { accept: true }, sessionId).catch(() => undefined);
      }
    });
    for (const domain of ['Runtime', 'Log', 'Page']) await this.send(`${domain}.enable`, {}, sessionId);
    await this.send('Page.navigate', { url }, sessionId);
    return new Page(this, sessionId, events);
  }

  async close(): Promise<void> {
    if (this.exited === null) {
      const gone = new Promise((resolve) => this.child.once('exit', resolve));
      // A browser that does not close within 5 s (or never answers) is killed.
      const timer = setTimeout(() => this.child.kill('SIGKILL'), 5000);
      void this.send('Browser.close').catch(() => undefined);
      await gone;
      clearTimeout(timer);
    }
    fs.rmSync(this.profile, { recursive: true, force: true });
  }
}

export class Page {
  constructor(
    private readonly browser: Chromium,
    private readonly sessionId: string,
    readonly events: PageEvents,
  ) {}

  /** The value of a JavaScript expression in the page (JSON-serializable). */
  async evaluate<T>(expression: string): Promise<T> {
    const r = await this.browser.send<{ result: { value?: T }; exceptionDetails?: { text: string; exception?: { description?: string } } }>(
      'Runtime.evaluate',
      { expression, returnByValue: true, awaitPromise: true },
      this.sessionId,
    );
    if (r.exceptionDetails !== undefined)
      throw new Error(`${expression}: ${r.exceptionDetails.exception?.description ?? r.exceptionDetails.text}`);
    return r.result.value as T;
  }

  /** Polls `expression` until it is truthy and returns its value; fails after `timeoutMs` with the last value and `describe`'s. */
  async waitFor<T>(expression: string, timeoutMs: number, describe = 'document.body.innerText'): Promise<T> {
    const until = Date.now() + timeoutMs;
    for (;;) {
      const v = await this.evaluate<T>(expression);
      if (v) return v;
      if (Date.now() > until) {
        const seen = await this.evaluate<unknown>(describe).catch((e: unknown) => String(e));
        throw new Error(`not true within ${timeoutMs} ms: ${expression}\nthe page showed:\n${String(seen)}`);
      }
      await new Promise((r) => setTimeout(r, 100));
    }
  }

  /** A PNG of the page at `width` CSS pixels wide, the whole height. */
  async screenshot(width = 1280): Promise<Buffer> {
    await this.browser.send(
      'Emulation.setDeviceMetricsOverride',
      { width, height: 600, deviceScaleFactor: 1, mobile: false },
      this.sessionId,
    );
    const height = Math.ceil(await this.evaluate<number>('document.documentElement.scrollHeight'));
    await this.browser.send('Emulation.setDeviceMetricsOverride', { width, height, deviceScaleFactor: 1, mobile: false }, this.sessionId);
    const { data } = await this.browser.send<{ data: string }>('Page.captureScreenshot', { format: 'png' }, this.sessionId);
    return Buffer.from(data, 'base64');
  }
}
