import { passes, usage, type Figure } from './figures.ts';

/*
 * The one benchmark report (bench/report.ts writes it): every figure of one
 * run against its DESIGN.md target, as JSON, a Markdown table and an SVG
 * chart of how much of its allowance each figure uses. Pure: tested on
 * fixed input (test/bench/).
 */

export interface BenchRun {
  readonly name: string;
  readonly argv: readonly string[];
  readonly exitCode: number | null;
  readonly seconds: number;
  readonly figures: readonly Figure[];
  /** Set when the bench gave no figures (it failed, or wrote none in this run). */
  readonly error?: string;
}

export interface Report {
  readonly mode: 'quick' | 'full';
  readonly startedAt: string;
  readonly seconds: number;
  readonly machine: string;
  readonly benches: readonly BenchRun[];
}

export interface JudgedFigure extends Figure {
  readonly bench: string;
  readonly pass: boolean;
  readonly usage: number;
}

/** Every figure of the run; `pass` is null for one with no target. */
function every(r: Report): (Omit<JudgedFigure, 'pass'> & { readonly pass: boolean | null })[] {
  return r.benches.flatMap((b) => b.figures.map((f) => ({ ...f, bench: b.name, pass: passes(f), usage: usage(f) })));
}

/** The figures with a target, judged against it. */
export function judged(r: Report): JudgedFigure[] {
  return every(r).filter((f): f is JudgedFigure => f.pass !== null);
}

export function reportJson(r: Report): unknown {
  const all = judged(r);
  return {
    ...r,
    benches: r.benches.map((b) => ({ ...b, figures: every(r).filter((f) => f.bench === b.name) })),
    pass: all.filter((f) => f.pass).length,
    miss: all.filter((f) => !f.pass).length,
    failedBenches: r.benches.filter((b) => b.error !== undefined).map((b) => b.name),
  };
}

function num(v: number): string {
  if (!Number.isFinite(v)) return String(v);
  const a = Math.abs(v);
  return a >= 100 ? v.toFixed(0) : a >= 10 ? v.toFixed(1) : v.toFixed(2);
}

function withUnit(v: number, unit: string): string {
  return unit === 'x' ? `${num(v)}×` : `${num(v)} ${unit}`;
}

const cell = (s: string) => s.replace(/\|/g, '\\|');

export function renderMarkdown(r: Report): string {
  const all = judged(r);
  const miss = all.filter((f) => !f.pass).length;
  const lines = [
    '# Benchmark report',
    '',
    `\`npm run bench${r.mode === 'full' ? ' -- --full' : ''}\` (${r.mode} mode), started ${r.startedAt}, ${Math.round(r.seconds)} s, on ${r.machine}.`,
    'Every figure below was measured in this run, against its target in DESIGN.md ("Performance targets").',
    `**${all.length - miss} pass, ${miss} miss.** "use" is the share of its allowance a figure uses (measured / limit for an upper bound, limit / measured for a lower bound): at most 1 passes. Chart: [latest.svg](latest.svg).`,
    '',
    '| bench | target (DESIGN.md) | figure | measured | target | use | result |',
    '|---|---|---|---|---|---|---|',
    ...every(r).map((f) =>
      f.pass === null
        ? `| ${f.bench} | ${cell(f.target)} | ${cell(f.what)} | ${withUnit(f.value, f.unit)} | no target | - | - |`
        : `| ${f.bench} | ${cell(f.target)} | ${cell(f.what)} | ${withUnit(f.value, f.unit)} | ${f.op} ${withUnit(f.limit, f.unit)} | ${num(f.usage)} | ${f.pass ? 'pass' : '**miss**'} |`,
    ),
    '',
    '| bench | arguments | seconds | exit |',
    '|---|---|---|---|',
    ...r.benches.map(
      (b) =>
        `| ${b.name} | \`${b.argv.join(' ') || '(defaults)'}\` | ${Math.round(b.seconds)} | ${b.exitCode ?? 'signal'}${b.error === undefined ? '' : `: ${cell(b.error)}`} |`,
    ),
    '',
  ];
  const failed = r.benches.filter((b) => b.error !== undefined);
  if (failed.length > 0) lines.push(`**Not measured** (the bench gave no figures): ${failed.map((b) => b.name).join(', ')}.`, '');
  return lines.join('\n');
}

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

/** Horizontal bars of each figure's use of its allowance, a line at 1 (the target), pass green, miss red; bars past the scale are cut and marked. */
export function renderSvg(r: Report): string {
  const all = judged(r);
  const label = 430;
  const plot = 420;
  const row = 18;
  const top = 40;
  const scaleMax = Math.min(4, Math.max(2, ...all.map((f) => (Number.isFinite(f.usage) ? Math.ceil(f.usage) : 4))));
  const x = (u: number) => label + (Math.min(Math.max(u, 0), scaleMax) / scaleMax) * plot;
  const height = top + all.length * row + 30;
  const width = label + plot + 90;
  const parts = [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="sans-serif" font-size="11">`,
    `<rect width="100%" height="100%" fill="white"/>`,
    `<text x="8" y="16" font-size="13" font-weight="bold">${esc(`sluice benchmarks (${r.mode}, ${r.startedAt}): share of each target's allowance used; at most 1 passes`)}</text>`,
  ];
  for (let t = 0; t <= scaleMax; t += 0.5) {
    parts.push(
      `<line x1="${x(t)}" y1="${top - 8}" x2="${x(t)}" y2="${top + all.length * row}" stroke="${t === 1 ? '#333' : '#ddd'}" stroke-width="${t === 1 ? 1.5 : 1}"/>`,
      `<text x="${x(t)}" y="${top - 12}" text-anchor="middle" fill="#555">${t}</text>`,
    );
  }
  all.forEach((f, i) => {
    const y = top + i * row;
    const cut = !Number.isFinite(f.usage) || f.usage > scaleMax;
    parts.push(
      `<text x="${label - 6}" y="${y + 12}" text-anchor="end">${esc(`${f.bench}: ${f.what}`.slice(0, 78))}</text>`,
      `<rect x="${label}" y="${y + 3}" width="${Math.max(1, x(f.usage) - label)}" height="${row - 6}" fill="${f.pass ? '#3a8f3a' : '#c0392b'}"><title>${esc(`${f.what}: ${withUnit(f.value, f.unit)} (target ${f.op} ${withUnit(f.limit, f.unit)}): ${f.pass ? 'pass' : 'miss'}`)}</title></rect>`,
      `<text x="${x(f.usage) + 4}" y="${y + 12}">${esc(`${num(f.usage)}${cut ? ' (cut)' : ''} ${f.pass ? 'pass' : 'miss'}`)}</text>`,
    );
  });
  parts.push('</svg>', '');
  return parts.join('\n');
}
