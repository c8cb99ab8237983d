/*
 * Deterministic companion to bench/journal-shapes.ts: counts the machine
 * instructions SQLite executes (inside sqlite3_step, via valgrind's callgrind)
 * per row and phase for each capture variant. Instruction counts do not care
 * how busy the machine is, so they rank trigger shapes where wall-clock
 * ratios on a shared two-core box cannot. They leave out I/O waits (fsync),
 * so they complement the timed benches, not replace them.
 *
 *   npx tsx bench/shape-instructions.ts [--rows 5000] [--only src,best] [--retention N] [--wide K] [--unique]
 *
 * Needs valgrind. Takes minutes: everything runs about 50x slower under it.
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmtRatio, intFlag, PHASES, renderTable, type PhaseTimes } from './lib/workload.ts';
import { shapeVariants } from './lib/variants.ts';

const argv = process.argv.slice(2);
const rows = intFlag(argv, 'rows', 5000);
const retention = intFlag(argv, 'retention', 0, 0);
const wide = intFlag(argv, 'wide', 0, 0);
const unique = argv.includes('--unique');
const onlyArg = argv.indexOf('--only');
const only = onlyArg === -1 ? undefined : String(argv[onlyArg + 1]).split(',');

const here = path.dirname(fileURLToPath(import.meta.url));
const all = shapeVariants({ retention, wide, unique });
const names = all.map((v) => v.name).filter((n, i) => i === 0 || only === undefined || only.includes(n));

const work = fs.mkdtempSync(path.join(os.tmpdir(), 'sluice-callgrind-'));
try {
  const outFile = path.join(work, 'cg.out');
  const r = spawnSync(
    'valgrind',
    [
      '--tool=callgrind',
      `--callgrind-out-file=${outFile}`,
      '--collect-atstart=no',
      '--toggle-collect=sqlite3_step',
      '--dump-before=sourceidFunc',
      process.execPath,
      '--import',
      'tsx',
      path.join(here, 'lib', 'instr-child.ts'),
      String(rows),
      String(retention),
      String(wide),
      unique ? '1' : '0',
      ...names,
    ],
    { encoding: 'utf8', stdio: ['ignore', 'inherit', 'pipe'] },
  );
  if (r.error !== undefined || r.status !== 0) {
    process.stderr.write(r.stderr ?? '');
    throw new Error(`valgrind failed (${r.error?.message ?? `exit ${String(r.status)}`}); is valgrind installed?`);
  }
  // Dumps are numbered in order: per variant, [setup], insert, update, delete.
  const dumps = fs
    .readdirSync(work)
    .map((f) => /^cg\.out\.(\d+)$/.exec(f))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ n: Number(m[1]), file: path.join(work, m[0]) }))
    .sort((a, b) => a.n - b.n)
    .map((d) => {
      const text = fs.readFileSync(d.file, 'utf8');
      const m = /^(?:summary|totals):\s+(\d+)/m.exec(text);
      return m === null ? 0 : Number(m[1]);
    });
  if (dumps.length !== 4 * names.length) throw new Error(`expected ${4 * names.length} callgrind dumps, found ${dumps.length}`);
  const perRow = new Map<string, PhaseTimes>();
  names.forEach((name, i) => {
    const [, ins, upd, del] = dumps.slice(4 * i, 4 * i + 4) as [number, number, number, number];
    perRow.set(name, { insert: ins / rows, update: upd / rows, delete: del / rows });
  });
  const base = perRow.get('none') as PhaseTimes;
  const lines = names.map((name) => {
    const p = perRow.get(name) as PhaseTimes;
    const note = all.find((v) => v.name === name)?.note ?? '';
    return [
      name,
      ...PHASES.map((ph) => Math.round(p[ph]).toString()),
      ...PHASES.map((ph) => `+${Math.round(p[ph] - base[ph])}`),
      ...PHASES.map((ph) => fmtRatio(p[ph] / base[ph])),
      note,
    ];
  });
  console.log(
    `instructions inside sqlite3_step per row (callgrind), ${rows} rows${retention > 0 ? `, retention ${retention}` : ''}${wide > 0 ? `, t has ${5 + wide} columns` : ''}${unique ? ', t has UNIQUE(name)' : ''}`,
  );
  console.log(renderTable(['variant', 'ins', 'upd', 'del', '+ins', '+upd', '+del', 'ins', 'upd', 'del', 'shape'], lines));
  const outDir = path.join(here, 'out');
  fs.mkdirSync(outDir, { recursive: true });
  fs.writeFileSync(
    path.join(outDir, 'shape-instructions.json'),
    `${JSON.stringify({ rows, retention, wide, unique, instructionsPerRow: Object.fromEntries(perRow) }, null, 2)}\n`,
  );
} finally {
  fs.rmSync(work, { recursive: true, force: true });
}
