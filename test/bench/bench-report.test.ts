// the benchmark report marks each figure pass or miss against its target
import { test, expect, describe } from '../support/fixtures.ts';
import { floorsOf, renderMarkdown, renderSvg, reportJson, type Report } from '../../bench/lib/report.ts';

/*
 * The report writer of `npm run bench` on fixed input (no timing here): a
 * figure within its target is pass, one past it is miss, for upper and lower
 * bounds alike, and a bench that gave no figures is said to be not measured.
 */

const report: Report = {
  mode: 'quick',
  startedAt: '2026-12-01T12:00:00.000Z',
  seconds: 321,
  machine: '2 × test cpu',
  benches: [
    {
      name: 'capture-overhead',
      argv: ['--quick'],
      exitCode: 0,
      seconds: 40,
      figures: [
        { id: 'a', target: 'floor', what: 'images insert vs floor', value: 1.1, unit: 'x', op: '<=', limit: 1.25 },
        { id: 'b', target: 'floor', what: 'images delete vs floor', value: 1.5, unit: 'x', op: '<=', limit: 1.25 },
        { id: 'c', target: 'chronicle', what: 'faster than chronicle', value: 1.2, unit: 'x', op: '>=', limit: 1.5 },
      ],
    },
    {
      name: 'follow',
      argv: [],
      exitCode: 0,
      seconds: 30,
      figures: [
        { id: 'd', target: 'latency', what: 'p99 at 1k/s', value: 3, unit: 'ms', op: '<=', limit: 5 },
        { id: 'e', target: 'idle', what: 'idle CPU', value: 2, unit: '% of a core', op: '<', limit: 2 },
        { id: 'f', target: 'snapshot', what: 'snapshot vs raw', value: 0.9, unit: 'x', op: '>=', limit: 0.8 },
      ],
    },
    { name: 'import', argv: ['--rows', '10'], exitCode: 1, seconds: 2, figures: [], error: 'exited 1' },
  ],
};

/** The report with a figure that has no performance target. */
const withUntargeted: Report = {
  ...report,
  benches: [
    ...report.benches,
    {
      name: 'fan-out',
      argv: [],
      exitCode: 0,
      seconds: 20,
      figures: [{ id: 'g', target: 'fan-out throughput', what: 'fan-out vs sync events/s', value: 0.4, unit: 'x', op: 'none', limit: 0 }],
    },
  ],
};

describe('the benchmark report', () => {
  test('marks a figure within its target pass and one past it miss, for upper and lower bounds', () => {
    const j = reportJson(report) as { pass: number; miss: number; benches: { figures: { id: string; pass: boolean; usage: number }[] }[] };
    const byId = Object.fromEntries(j.benches.flatMap((b) => b.figures).map((f) => [f.id, f]));
    expect(Object.fromEntries(Object.entries(byId).map(([k, f]) => [k, f.pass]))).toEqual({
      a: true,
      b: false,
      c: false,
      d: true,
      e: false,
      f: true,
    });
    expect(byId.b?.usage).toBeCloseTo(1.2);
    expect(byId.c?.usage).toBeCloseTo(1.25);
    expect([j.pass, j.miss]).toEqual([3, 3]);
  });

  test('the Markdown table has one row per figure with its measured value, target and result, and names a bench that measured nothing', () => {
    const md = renderMarkdown(report);
    expect(md).toMatch(/\*\*3 pass, 3 miss\.\*\*/);
    expect(md).toContain('| capture-overhead | floor | images insert vs floor | 1.10× | <= 1.25× | 0.88 | pass |');
    expect(md).toContain('| capture-overhead | floor | images delete vs floor | 1.50× | <= 1.25× | 1.20 | **miss** |');
    expect(md).toContain('| follow | idle | idle CPU | 2.00 % of a core | < 2.00 % of a core | 1.00 | **miss** |');
    expect(md).toMatch(/\*\*Not measured\*\* \(the bench gave no figures\): import\./);
  });

  test('the SVG chart has a bar per figure, coloured by result, and is well-formed', () => {
    const svg = renderSvg(report);
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true);
    expect(svg.trim().endsWith('</svg>')).toBe(true);
    expect(svg.match(/<rect x=/g)).toHaveLength(6);
    expect(svg.match(/fill="#c0392b"/g)).toHaveLength(3);
    expect(svg).not.toMatch(/<[^>]*<(?!\/)/); // no unescaped < inside a tag
  });

  test('a figure with no DESIGN.md target is listed as "no target", counted neither pass nor miss, and drawn as no bar', () => {
    const j = reportJson(withUntargeted) as { pass: number; miss: number; benches: { figures: { id: string; pass: boolean | null }[] }[] };
    expect([j.pass, j.miss]).toEqual([3, 3]);
    expect(j.benches.flatMap((b) => b.figures).find((f) => f.id === 'g')?.pass).toBeNull();
    const md = renderMarkdown(withUntargeted);
    expect(md).toMatch(/\*\*3 pass, 3 miss\.\*\*/);
    expect(md).toContain('| fan-out | fan-out throughput | fan-out vs sync events/s | 0.40× | no target | - | - |');
    expect(renderSvg(withUntargeted).match(/<rect x=/g)).toHaveLength(6);
  });

  test('a floor more than 10% slower than in the previous report of the same mode is flagged with its figures; one 5% slower, or in another unit, is not', () => {
    const floor = (id: string, perSecond: number, unit = 'rows/s') => ({ id, what: `floor ${id}`, perSecond, unit });
    const withFloors: Report = {
      ...report,
      benches: [
        {
          name: 'capture-overhead',
          argv: [],
          exitCode: 0,
          seconds: 1,
          figures: [
            {
              id: 'p',
              target: 'floor',
              what: 'insert vs floor',
              value: 1.1,
              unit: 'x',
              op: '<=',
              limit: 1.25,
              floor: floor('fi', 80_000),
              cpu: 1.05,
            },
            { id: 'q', target: 'floor', what: 'update vs floor', value: 1.1, unit: 'x', op: '<=', limit: 1.25, floor: floor('fu', 95_000) },
            {
              id: 'r',
              target: 'floor',
              what: 'delete vs floor',
              value: 1.5,
              unit: 'x',
              op: '<=',
              limit: 1.25,
              floor: floor('fd', 10, 'MB/s'),
            },
            { id: 's', target: 'floor', what: 'new floor', value: 1.0, unit: 'x', op: '<=', limit: 1.25, floor: floor('fn', 5) },
          ],
        },
      ],
      previousFloors: {
        startedAt: '2026-11-30T00:00:00.000Z',
        floors: {
          fi: { perSecond: 100_000, unit: 'rows/s', what: 'x' },
          fu: { perSecond: 100_000, unit: 'rows/s', what: 'x' },
          fd: { perSecond: 1000, unit: 'rows/s', what: 'x' },
        },
      },
    };
    const j = reportJson(withFloors) as { slowerFloors: string[]; benches: { figures: { id: string; floorChange?: number }[] }[] };
    expect(j.slowerFloors).toEqual(['p']);
    const byId = Object.fromEntries(j.benches[0]!.figures.map((f) => [f.id, f.floorChange]));
    expect(byId.p).toBeCloseTo(-0.2);
    expect(byId.q).toBeCloseTo(-0.05);
    expect(byId.r).toBeUndefined();
    expect(byId.s).toBeUndefined();
    const md = renderMarkdown(withFloors);
    expect(md).toMatch(/\*\*3 pass, 1 miss, 1 against a floor slower than before\.\*\*/);
    expect(md).toContain(
      '| capture-overhead | floor | insert vs floor | 1.10× (CPU 1.05×) | <= 1.25× | 0.88 | pass, floor 20% slower than before |',
    );
    expect(md).toContain('| capture-overhead | floor | update vs floor | 1.10× | <= 1.25× | 0.88 | pass |');
    expect(md).toContain('| fi | floor fi | 80000 rows/s | 100000 rows/s | −20% **slower** |');
    expect(md).toContain('| fu | floor fu | 95000 rows/s | 100000 rows/s | −5% |');
    expect(md).toContain('| fd | floor fd | 10.0 MB/s | - | - |');
    expect(floorsOf(withFloors).floors).toEqual({
      fi: { perSecond: 80_000, unit: 'rows/s', what: 'floor fi' },
      fu: { perSecond: 95_000, unit: 'rows/s', what: 'floor fu' },
      fd: { perSecond: 10, unit: 'MB/s', what: 'floor fd' },
      fn: { perSecond: 5, unit: 'rows/s', what: 'floor fn' },
    });
  });
});
