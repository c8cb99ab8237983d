import { passes, usage, type Figure, type FloorSpeed } from './figures.ts';

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
  /** The floors of the previous report of the same mode (bench/results/floors.json), to compare with. */
  readonly previousFloors?: FloorHistory;
}

/** Each floor's absolute speed in one report, by floor id. */
export interface FloorHistory {
  readonly startedAt: string;
  readonly floors: Readonly<Record<string, Pick<FloorSpeed, 'perSecond' | 'unit' | 'what'>>>;
}

/** A floor more than this much slower than in the previous report is flagged. */
export const FLOOR_SLOWER_FLAG = 0.1;

export interface JudgedFigure extends Figure {
  readonly bench: string;
  readonly pass: boolean;
  readonly usage: number;
  /**
   * The floor's speed now over its speed in the previous report, minus 1
   * (-0.2: 20% slower); absent without a floor or a previous figure in the same unit.
   */
  readonly floorChange?: number;
  /** The floor is more than FLOOR_SLOWER_FLAG slower than before: the ratio may look better than it is. */
  readonly floorSlower?: boolean;
}

function floorChange(f: Figure, prev: FloorHistory | undefined): { floorChange?: number; floorSlower?: boolean } {
  const before = f.floor === undefined ? undefined : prev?.floors[f.floor.id];
  if (f.floor === undefined || before === undefined || before.unit !== f.floor.unit || !(before.perSecond > 0)) return {};
  const change = f.floor.perSecond / before.perSecond - 1;
  return { floorChange: change, floorSlower: change < -FLOOR_SLOWER_FLAG };
}

/** Every figure of the run; `pass` is null for one with no target. */
function every(r: Report): (Omit<JudgedFigure, 'pass'> & { readonly pass: boolean | null })[] {
  return r.benches.flatMap((b) =>
    b.figures.map((f) => ({ ...f, bench: b.name, pass: passes(f), usage: usage(f), ...floorChange(f, r.previousFloors) })),
  );
}

/** The floors measured in this run, by id (one entry per floor, the first figure's measurement). */
export function floorsOf(r: Report): FloorHistory {
  const floors: Record<string, Pick<FloorSpeed, 'perSecond' | 'unit' | 'what'>> = {};
  for (const b of r.benches)
    for (const f of b.figures)
      if (f.floor !== undefined && floors[f.floor.id] === undefined)
        floors[f.floor.id] = { perSecond: f.floor.perSecond, unit: f.floor.unit, what: f.floor.what };
  return { startedAt: r.startedAt, floors };
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
    slowerFloors: all.filter((f) => f.floorSlower === true).map((f) => f.id),
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

function measured(f: Figure): string {
  return f.cpu === undefined ? withUnit(f.value, f.unit) : `${withUnit(f.value, f.unit)} (CPU ${withUnit(f.cpu, f.unit)})`;
}

function result(f: JudgedFigure): string {
  const word = f.pass ? 'pass' : '**miss**';
  return f.floorSlower === true ? `${word}, floor ${Math.round(-(f.floorChange ?? 0) * 100)}% slower than before` : word;
}

const pct = (v: number) => `${v >= 0 ? '+' : '−'}${Math.abs(Math.round(v * 100))}%`;

/** One row per floor: its absolute speed now and in the previous report of the same mode. */
function floorTable(r: Report): string[] {
  const now = floorsOf(r);
  const ids = Object.keys(now.floors);
  if (ids.length === 0) return [];
  const prev = r.previousFloors;
  return [
    `Floors, absolute (a ratio is only as honest as its floor: one more than ${FLOOR_SLOWER_FLAG * 100}% slower than in the previous ${r.mode} report${prev === undefined ? ', none on record,' : ` (${prev.startedAt})`} is flagged, and so are the figures measured against it):`,
    '',
    '| floor | what | now | previous | change |',
    '|---|---|---|---|---|',
    ...ids.map((id) => {
      const f = now.floors[id]!;
      const p = prev?.floors[id];
      const same = p !== undefined && p.unit === f.unit && p.perSecond > 0;
      const change = same ? f.perSecond / p.perSecond - 1 : undefined;
      const flag = change !== undefined && change < -FLOOR_SLOWER_FLAG ? ' **slower**' : '';
      return `| ${id} | ${cell(f.what)} | ${num(f.perSecond)} ${f.unit} | ${same ? `${num(p.perSecond)} ${p.unit}` : '-'} | ${change === undefined ? '-' : pct(change)}${flag} |`;
    }),
    '',
  ];
}

export function renderMarkdown(r: Report): string {
  const all = judged(r);
  const miss = all.filter((f) => !f.pass).length;
  const slower = all.filter((f) => f.floorSlower === true).length;
  const lines = [
    '# Benchmark report',
    '',
    `\`npm run bench${r.mode === 'full' ? ' -- --full' : ''}\` (${r.mode} mode), started ${r.startedAt}, ${Math.round(r.seconds)} s, on ${r.machine}.`,
    'Every figure below was measured in this run, against its target in DESIGN.md ("Performance targets").',
    `**${all.length - miss} pass, ${miss} miss${slower > 0 ? `, ${slower} against a floor slower than before` : ''}.** "use" is the share of its allowance a figure uses (measured / limit for an upper bound, limit / measured for a lower bound): at most 1 passes. Where wall time is noisy the same figure in CPU time is shown beside it; the judgement is on the first. Chart: [latest.svg](latest.svg).`,
    '',
    '| bench | target (DESIGN.md) | figure | measured | target | use | result |',
    '|---|---|---|---|---|---|---|',
    ...every(r).map((f) =>
      f.pass === null
        ? `| ${f.bench} | ${cell(f.target)} | ${cell(f.what)} | ${measured(f)} | no target | - | - |`
        : `| ${f.bench} | ${cell(f.target)} | ${cell(f.what)} | ${measured(f)} | ${f.op} ${withUnit(f.limit, f.unit)} | ${num(f.usage)} | ${result(f as JudgedFigure)} |`,
    ),
    '',
    ...floorTable(r),
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
