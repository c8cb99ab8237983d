/*
 * Child of bench/shape-instructions.ts, run under valgrind's callgrind with
 * collection only inside sqlite3_step. For each named variant it installs the
 * variant on a fresh database and runs the three bulk phases, calling
 * sqlite_source_id() before each phase and after the last one: the parent
 * runs callgrind with --dump-before=sourceidFunc, so every phase lands in its
 * own dump file. Not meant to be run by hand.
 *
 *   node --import tsx bench/lib/instr-child.ts <rows> <retention> <wide> <unique 0|1> <variant>...
 */
import { bulkPhases, freshDb, makeScratch, makeWorkload, PHASES } from './workload.ts';
import { shapeVariants } from './variants.ts';

const [rowsArg, retentionArg, wideArg, uniqueArg, ...names] = process.argv.slice(2);
const all = shapeVariants({ retention: Number(retentionArg), wide: Number(wideArg), unique: uniqueArg === '1' });
const w = makeWorkload(Number(rowsArg));
const { dir, cleanup } = makeScratch('sluice-instr-');
try {
  for (const name of names) {
    const variant = all.find((v) => v.name === name);
    if (variant === undefined) throw new Error(`unknown variant ${name}`);
    const { db, dispose } = freshDb(dir, variant.setup);
    const mark = db.prepare('SELECT sqlite_source_id()');
    const run = bulkPhases(db, w);
    mark.get();
    for (const p of PHASES) {
      run[p]();
      mark.get();
    }
    dispose();
  }
} finally {
  cleanup();
}
