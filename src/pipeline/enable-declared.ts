import { checkEnable, enable, type CaptureMode, type EnableResult } from '../capture/index.ts';
import { SluiceError, isSqliteBusy } from '../errors.ts';
import type { Db } from '../sqlite/index.ts';
import { enableCalls, heldByNewColumns, toEnable, type EnableCall, type HeldByNewColumns } from './declared.ts';
import type { PipelineSource } from './pipeline.ts';

/*
 * How a pass enables the declared capture (run's capture part and
 * convergeOnce), and how plan and health predict it: one enable call per
 * mode (enableCalls), and when enable's gates refuse a call, the call is
 * taken apart table by table (each table checked by itself, as enable
 * checks it), so that one refused table keeps no other from being
 * captured. enable's gates depend on the schema and on each table alone
 * (the foreign-key rules follow each table's own paths: gates.ts
 * capturable), so no table needs another one's company; a refusal of the
 * source as a whole (NAMESPACE_COLLISION, TEMP_SHADOW) refuses every table,
 * and is said once for all of them. Should a call be refused while each of
 * its tables passes alone (a rule of the set), its tables stay together and
 * the call is refused as it is.
 */

/** Tables of one enable call that enable refuses, with its error (one error said once for the tables it refuses). */
export interface EnableRefusal {
  readonly tables: readonly string[];
  readonly mode: CaptureMode;
  readonly error: SluiceError;
}

/** A refusal of enable's gates (nothing written), as opposed to what fails the pass itself (a locked source, an I/O error). */
function refusal(err: unknown): SluiceError | undefined {
  return err instanceof SluiceError && !isSqliteBusy(err) ? err : undefined;
}

/**
 * The tables of `call` enable's gates (checkEnable) accept, and the others
 * with their refusal, by the rule above. Reads only: plan and health ask it
 * on a read-only connection, and a pass before it enables.
 */
export function sortCall(db: Db, call: EnableCall): { accepted: readonly string[]; refused: readonly EnableRefusal[] } {
  const whole = attempt(() => checkEnable(db, call.tables));
  if (whole === undefined) return { accepted: call.tables, refused: [] };
  if (call.tables.length === 1) return { accepted: [], refused: [{ tables: call.tables, mode: call.mode, error: whole }] };
  const accepted: string[] = [];
  const refused: { tables: string[]; error: SluiceError }[] = [];
  for (const table of call.tables) {
    const err = attempt(() => checkEnable(db, [table]));
    if (err === undefined) accepted.push(table);
    else {
      const same = refused.find((r) => r.error.code === err.code && r.error.message === err.message);
      if (same === undefined) refused.push({ tables: [table], error: err });
      else same.tables.push(table);
    }
  }
  // Refused together and not alone: a rule of the set, which keeps its tables together.
  if (refused.length === 0) return { accepted: [], refused: [{ tables: call.tables, mode: call.mode, error: whole }] };
  return { accepted, refused: refused.map((r) => ({ ...r, mode: call.mode })) };
}

function attempt(check: () => unknown): SluiceError | undefined {
  try {
    check();
    return undefined;
  } catch (err) {
    const e = refusal(err);
    if (e === undefined) throw err;
    return e;
  }
}

/** What enableDeclared did: each call's tables enabled, with enable's result, each refusal, and the tables it left unarmed for new columns the file does not name. */
export interface DeclaredEnables {
  readonly enabled: readonly { readonly call: EnableCall; readonly tables: readonly string[]; readonly result: EnableResult }[];
  readonly refused: readonly EnableRefusal[];
  readonly held: readonly HeldByNewColumns[];
}

/**
 * Enables what `source` declares and `db` (its source, read-write) does not
 * capture so (toEnable), by enableCalls, each refused call taken apart
 * (sortCall): every table enable accepts is captured. A table held unarmed
 * by new columns the file does not name is not enabled (`held`). Throws
 * only what is no refusal (the source locked: the caller retries).
 */
export function enableDeclared(db: Db, source: PipelineSource, capture: Parameters<typeof toEnable>[1]): DeclaredEnables {
  const enabled: DeclaredEnables['enabled'][number][] = [];
  const refused: EnableRefusal[] = [];
  for (const call of enableCalls(toEnable(source, capture))) {
    const options = {
      mode: call.mode,
      ...(call.exclude === undefined ? {} : { exclude: call.exclude }),
      ...(call.include === undefined ? {} : { include: call.include }),
    };
    let tables = call.tables;
    let result: EnableResult;
    try {
      result = enable(db, tables, options);
    } catch (err) {
      if (refusal(err) === undefined) throw err;
      const sorted = sortCall(db, call);
      refused.push(...sorted.refused);
      // Refused for what the gates do not see (an exclude enable cannot apply): the call's tables, with enable's own error.
      if (sorted.refused.length === 0) refused.push({ tables, mode: call.mode, error: refusal(err) as SluiceError });
      tables = sorted.refused.length === 0 ? [] : sorted.accepted;
      if (tables.length === 0) continue;
      try {
        result = enable(db, tables, options);
      } catch (again) {
        const e = refusal(again);
        if (e === undefined) throw again;
        refused.push({ tables, mode: call.mode, error: e });
        continue;
      }
    }
    enabled.push({ call, tables, result });
  }
  return { enabled, refused, held: heldByNewColumns(source, capture) };
}

/** The refusals a pass meets enabling what `source` declares, read without writing (plan's and health's prediction of enableDeclared). */
export function declaredRefusals(db: Db, source: PipelineSource, capture: Parameters<typeof toEnable>[1]): EnableRefusal[] {
  return enableCalls(toEnable(source, capture)).flatMap((call) => [...sortCall(db, call).refused]);
}
