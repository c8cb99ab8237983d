import { createHash } from 'node:crypto';

/*
 * The status page `sluice run` serves at / of its `listen` address: one
 * self-contained HTML document (inline CSS and JS, no build step, nothing
 * fetched but its own `healthz`, so it works offline and behind a proxy at
 * a sub-path). Every second it reads healthz (a RunStatus, status.ts; 200 or
 * 503, both with the JSON) and draws every source, target, projection and
 * part of the run from it. Every value from the JSON reaches the page
 * through textContent, never as markup: a table named
 * `<img src=x onerror=alert(1)>` shows as that text. The page's script and
 * style are allowed by their hashes in STATUS_PAGE_CSP, which allows nothing
 * else (no inline handlers, no images, no other origin), so even markup that
 * got in would not run.
 */

const STYLE = `
:root { color-scheme: light dark; --ok: #1a7f37; --warn: #9a6700; --bad: #cf222e; --muted: #6e7781; --line: #d0d7de; --code: #f6f8fa; }
@media (prefers-color-scheme: dark) { :root { --ok: #3fb950; --warn: #d29922; --bad: #f85149; --muted: #8b949e; --line: #30363d; --code: #161b22; } }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; margin: 0 auto; padding: 1rem 1.5rem 3rem; max-width: 90rem; }
header { display: flex; flex-wrap: wrap; align-items: baseline; gap: .25rem 1rem; border-bottom: 1px solid var(--line); padding-bottom: .5rem; }
h1 { font-size: 1.4rem; margin: 0; }
h2 { font-size: 1.1rem; margin: 1.6rem 0 .4rem; }
h3 { font-size: 1rem; margin: 1.1rem 0 .3rem; overflow-wrap: anywhere; }
.meta, .muted { color: var(--muted); }
.meta span + span::before { content: " · "; }
.banner { border: 1px solid var(--bad); border-left-width: 4px; padding: .5rem .75rem; margin: .75rem 0; }
.banner.warn { border-color: var(--warn); }
table { border-collapse: collapse; width: 100%; margin: .25rem 0 .5rem; }
th, td { text-align: left; vertical-align: top; padding: .3rem .5rem; border-bottom: 1px solid var(--line); }
th { font-weight: 600; white-space: nowrap; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
td.name { word-break: break-all; font-weight: 600; }
code, .cmd { font: 12.5px/1.4 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; }
.cmd { display: block; background: var(--code); padding: .25rem .4rem; white-space: pre-wrap; overflow-wrap: anywhere; }
.badge { display: inline-block; padding: 0 .45rem; border-radius: .7rem; border: 1px solid currentColor; font-size: 12px; font-weight: 600; white-space: nowrap; }
.ok { color: var(--ok); } .warn { color: var(--warn); } .bad { color: var(--bad); } .none { color: var(--muted); }
ul.problems { margin: .25rem 0; padding-left: 1.25rem; }
.reason { display: block; font-size: 12px; color: var(--muted); }
`;

const SCRIPT = `
'use strict';
(() => {
  const EVERY_MS = 1000;
  const root = document.getElementById('status');
  const conn = document.getElementById('conn');
  let shown = null;

  // Only these class names ever come from data, by lookup: a state never becomes markup or a class of its own.
  const TONE = { active: 'ok', running: 'ok', true: 'ok', building: 'warn', starting: 'warn', retrying: 'warn', pending: 'warn', rebuilding: 'warn',
    suspended: 'bad', diverged: 'bad', missing: 'bad', lost: 'bad', stopped: 'bad', failed: 'bad', false: 'bad' };

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(parent, ...kids) {
    for (const k of kids) if (k !== null && k !== undefined && k !== false) parent.append(typeof k === 'string' ? document.createTextNode(k) : k);
    return parent;
  }
  function badge(word, tone) { return el('span', 'badge ' + (tone || TONE[String(word)] || 'none'), word); }
  function num(n) { return n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'); }
  function span(ms) {
    if (ms === null || ms === undefined) return '–';
    if (ms < 1000) return Math.round(ms) + ' ms';
    const s = ms / 1000;
    if (s < 60) return (s < 10 ? s.toFixed(1) : Math.round(s)) + ' s';
    if (s < 3600) return Math.floor(s / 60) + ' min ' + Math.round(s % 60) + ' s';
    if (s < 86400) return Math.floor(s / 3600) + ' h ' + Math.round((s % 3600) / 60) + ' min';
    return Math.floor(s / 86400) + ' d ' + Math.round((s % 86400) / 3600) + ' h';
  }
  function clock(ms) { return ms === null || ms === undefined ? '–' : new Date(ms).toLocaleString(); }
  function problems(list) {
    if (!list || list.length === 0) return null;
    const ul = el('ul', 'problems');
    for (const p of list) add(ul, el('li', 'cmd', p));
    return ul;
  }
  function table(headers, rows) {
    const t = el('table');
    const tr = el('tr');
    for (const h of headers) add(tr, el('th', null, h));
    add(t, add(el('thead'), tr));
    const body = el('tbody');
    for (const cells of rows) {
      const r = el('tr');
      for (const c of cells) add(r, c instanceof Node ? c : el('td', null, c));
      add(body, r);
    }
    return add(t, body);
  }
  function td(cls, ...kids) { return add(el('td', cls), ...kids); }

  function failureCell(f, now) {
    if (!f) return td(null, el('span', 'muted', 'none'));
    const when = f.ms === null || f.ms === undefined ? '' : ', ' + span(Math.max(0, now - f.ms)) + ' ago';
    const times = f.consecutive !== undefined ? f.consecutive : f.attempts;
    const retry = f.retryMs ? ', next try in ' + span(Math.max(0, f.retryMs - now)) : '';
    return td(null, el('code', 'bad', f.code), ' ', f.message, el('span', 'reason', times + '× in a row' + when + retry));
  }

  function projectionRow(p, now) {
    const state = td(null, badge(p.state));
    if (p.reason) add(state, el('code', 'reason', p.reason));
    if (p.declared === false) add(state, el('span', 'reason', 'undeclared'));
    if (p.rebuild) add(state, el('span', 'reason', 'next sync rebuilds: ' + p.rebuild));
    const repair = td(null);
    if (p.action) add(repair, el('span', 'cmd', p.action));
    if (p.problems && p.problems.length > 1) add(repair, problems(p.problems.slice(1)));
    if (!p.action && p.note) add(repair, el('span', 'muted', p.note));
    if (!p.action && !p.note) add(repair, el('span', 'muted', 'nothing to do'));
    return [td('name', p.name), td(null, p.kind), state, td('num', num(p.lagEvents)), td('num', span(p.lagMs)), failureCell(p.failure, now), repair];
  }

  function section(title) { return el('h2', null, title); }

  function render(s) {
    const now = s.checkedMs;
    const run = s.run || null;
    const out = [];
    const head = el('header');
    const nProblems = (s.problems || []).length;
    add(head, el('h1', null, 'sluice'), badge(s.ok ? 'ok' : 'needs action', s.ok ? 'ok' : 'bad'));
    const meta = add(el('div', 'meta'), el('span', null, s.config));
    if (run) add(meta, el('span', null, 'pid ' + run.pid), el('span', null, 'up ' + span(now - run.startedMs)), el('span', null, 'file loaded ' + clock(run.loadedMs)));
    add(meta, el('span', null, 'checked ' + clock(now)));
    out.push(add(head, meta));
    document.title = 'sluice · ' + (s.ok ? 'ok' : nProblems + ' problem' + (nProblems === 1 ? '' : 's'));

    if (run && run.configError) {
      out.push(add(el('div', 'banner'), el('strong', null, 'The pipeline file does not load '), el('code', null, run.configError.code),
        el('div', 'cmd', run.configError.message),
        el('div', 'muted', 'Since ' + clock(run.configError.ms) + '. The configuration loaded before keeps running until the file is fixed.')));
    }
    if (nProblems > 0) out.push(section('Problems'), problems(s.problems));

    out.push(section('Sources'));
    if (s.sources.length === 0) out.push(el('p', 'muted', 'No source is declared.'));
    for (const src of s.sources) {
      out.push(add(el('h3'), badge(src.ok ? 'ok' : 'needs action', src.ok ? 'ok' : 'bad'), ' ', src.path));
      out.push(add(el('div', 'meta'), el('span', null, 'source id ' + (src.sourceId === null ? '–' : src.sourceId)), el('span', null, 'seq ' + num(src.seq))));
      out.push(problems(src.problems));
      if (src.tables.length > 0)
        out.push(table(['Table', 'Mode', 'Captured', 'Armed', 'Declared', 'Problem'], src.tables.map((t) => [
          td('name', t.table), t.mode === null ? '–' : t.mode, td(null, badge(t.captured ? 'yes' : 'no', t.captured ? 'ok' : 'bad')),
          td(null, badge(t.armed ? 'yes' : 'no', t.armed ? 'ok' : 'bad')), t.declared ? 'yes' : 'no (undeclared)',
          t.problem ? td(null, el('span', 'cmd', t.problem)) : td(null, el('span', 'muted', 'none')),
        ])));
      if (src.acknowledgements.length > 0)
        out.push(table(['Acknowledged by', 'Seq', 'Declared'], src.acknowledgements.map((a) => [td('name', a.consumer), td('num', num(a.seq)), a.declared ? 'yes' : 'no'])));
    }

    out.push(section('Targets'));
    if (s.targets.length === 0) out.push(el('p', 'muted', 'No target is declared.'));
    for (const t of s.targets) {
      out.push(add(el('h3'), badge(t.ok ? 'ok' : 'needs action', t.ok ? 'ok' : 'bad'), ' ', t.path));
      const m = add(el('div', 'meta'), el('span', null, t.via === 'subscribe' ? 'fed by subscribe' : 'synced from ' + t.source));
      if (!t.exists) add(m, el('span', 'bad', 'file missing'));
      if (t.bounds.maxLagEvents !== null) add(m, el('span', null, 'max lag ' + num(t.bounds.maxLagEvents) + ' events'));
      if (t.bounds.maxLagMs !== null) add(m, el('span', null, 'max lag ' + span(t.bounds.maxLagMs)));
      out.push(m, problems(t.problems));
      if (t.projections.length > 0)
        out.push(table(['Projection', 'Kind', 'State', 'Lag (events)', 'Lag (time)', 'Last failure', 'Repair'], t.projections.map((p) => projectionRow(p, now))));
    }

    if (run) {
      out.push(section('Parts of the run'));
      out.push(table(['Part', 'Name', 'State', 'Last failure'], run.parts.map((p) => [p.kind, td('name', p.name), td(null, badge(p.state)), failureCell(p.failure, now)])));
    }
    root.replaceChildren(...out.filter((x) => x !== null));
  }

  async function tick() {
    try {
      const res = await fetch('healthz', { cache: 'no-store', headers: { accept: 'application/json' }, signal: AbortSignal.timeout(5000) });
      const type = res.headers.get('content-type') || '';
      if (!type.includes('json')) throw new Error('healthz answered ' + res.status + ' without JSON');
      const s = await res.json();
      shown = s;
      // Redrawing under a selection would lose it: a repair command being copied stays until the selection ends.
      const sel = window.getSelection();
      if (sel && !sel.isCollapsed && root.contains(sel.anchorNode)) conn.replaceChildren(el('span', 'muted', 'Updates paused while text is selected.'));
      else { render(s); conn.replaceChildren(); }
    } catch (err) {
      conn.replaceChildren(add(el('div', 'banner warn'), 'Cannot read healthz: ' + (err && err.message ? err.message : String(err)) +
        (shown ? '. Showing what it said at ' + clock(shown.checkedMs) + '.' : '.')));
    } finally {
      setTimeout(tick, EVERY_MS);
    }
  }
  tick();
})();
`;

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text, 'utf8').digest('base64')}'`;

/**
 * The Content-Security-Policy to serve with statusPageHtml(): its own
 * inline script and style by hash, fetches to its own origin, and nothing
 * else (no other script or style, no inline handler, no image, no frame, no
 * form).
 *
 * @example
 * res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'content-security-policy': STATUS_PAGE_CSP });
 */
export const STATUS_PAGE_CSP = [
  "default-src 'none'",
  `script-src ${sha256(SCRIPT)}`,
  `style-src ${sha256(STYLE)}`,
  "connect-src 'self'",
  "img-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

/**
 * The status page: one HTML document that polls `healthz` (relative to
 * itself) every second and shows the run's state. Serve it with
 * STATUS_PAGE_CSP.
 *
 * @example
 * http.createServer((req, res) => res.writeHead(200, { 'content-security-policy': STATUS_PAGE_CSP }).end(statusPageHtml()));
 */
export function statusPageHtml(): string {
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="no-referrer">
<title>sluice</title>
<style>${STYLE}</style>
</head>
<body>
<div id="conn"></div>
<main id="status"><p>Reading healthz…</p></main>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
