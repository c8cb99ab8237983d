import { InvalidInputError, SluiceError } from '../errors.ts';
import { refuseTarget } from '../capture/index.ts';
import { compileProjection, sourceShape } from '../projection/index.ts';
import { describeTable, foldIdent, openDatabase, findObjects } from '../sqlite/index.ts';
import type { Pipeline } from './pipeline.ts';

/*
 * What a pipeline file declares that only its sources can confirm: every
 * table it captures exists there (and the source is not a sluice target),
 * and every definition names its table as
 * the source does. Read-only; run after loadPipeline and
 * before anything is written, so that a typo in a table name is refused
 * with its line instead of leaving a half-built pipeline.
 */

export interface CheckSourcesOptions {
  /**
   * Whether a declared capture table that the source does not hold is
   * refused (the default: before anything is written), or left to the
   * caller, as health reports it as the source's problem.
   */
  readonly missingTables?: 'refuse' | 'leave';
}

export function checkPipelineSources(pipeline: Pipeline, options: CheckSourcesOptions = {}): void {
  for (const source of pipeline.sources) {
    const db = openDatabase(source.path, { readonly: true, role: 'source' });
    try {
      try {
        refuseTarget(db);
      } catch (err) {
        if (err instanceof SluiceError) throw new InvalidInputError(err.code, `${source.declaredAt}: ${err.message}`, { cause: err });
        throw err;
      }
      for (const c of options.missingTables === 'leave' ? [] : source.capture) {
        const found = findObjects(db, c.table).filter((o) => o.schema === 'main');
        if (found.length === 0)
          throw new InvalidInputError(
            'PIPELINE_INVALID',
            `${c.declaredAt}: table ${c.table} does not exist in source ${source.path}. Create it first, or correct the name in "capture".`,
          );
      }
      // SQLite finds a table in any case, but sync matches a definition's table to the captured one exactly.
      for (const t of source.targets)
        for (const e of t.projections)
          for (const d of e.kind === 'all' ? [] : e.definitions) {
            const real = findObjects(db, d.source).find((o) => o.schema === 'main')?.name;
            if (real !== undefined && real !== d.source)
              throw new InvalidInputError(
                'PIPELINE_INVALID',
                `${e.declaredAt}: projection ${d.name} reads table ${d.source}, which source ${source.path} names ${real}; sluice matches a projection's table by its exact name. Write source: ${real}.`,
              );
            // A column the file leaves out of capture is in no snapshot or event: refused now, not once the pass has enabled the exclude.
            const exclude = source.capture.find((c) => foldIdent(c.table) === foldIdent(d.source))?.exclude;
            const info = exclude === undefined || exclude.length === 0 ? undefined : describeTable(db, d.source);
            if (info === undefined || info.kind !== 'table') continue;
            try {
              compileProjection(d, sourceShape(info, exclude));
            } catch (err) {
              if (err instanceof SluiceError && err.code === 'EXCLUDED_COLUMN_READ')
                throw new InvalidInputError('PIPELINE_INVALID', `${e.declaredAt}: ${err.message}`, { cause: err });
              // Any other error is sync's to report, with the source's own shape (plan and run say it).
            }
          }
    } finally {
      db.close();
    }
  }
}
