// verify compares a target built by import (JSONL or segments) of a table that leaves a column out of capture
import path from 'node:path';
import { test, expect, describe, runSqliteCli } from '../../support/fixtures.ts';
import { cli } from '../support/target.ts';

/*
 * A table captured with `enable --exclude secret`, exported and imported:
 * the rows are the source's, health is green and explain says the next
 * sync goes on from its cursor, yet verify refused to compare it on every
 * run ("NOT VERIFIED DEFINITION_CHANGED ... the next sluice sync rebuilds
 * it", exit 3), and pointed an imported target at sync. An export's table
 * line names the captured columns only (never the ones left out), so the
 * import stored a fingerprint over that shape, and verify compared it with
 * one over the source's shape with its exclusion list. The list changes no
 * row: verify now takes the fingerprint of the shape as a file states it
 * too. A row that differs is still found.
 */

describe('sluice verify', () => {
  for (const format of ['jsonl', 'segment'] as const)
    test(`a target imported from ${format === 'jsonl' ? 'a JSONL file' : 'segments'} of a table with a column left out is compared, and a row edited in it is found`, ({
      tmp,
    }) => {
      const src = path.join(tmp, 'src.db');
      runSqliteCli(
        src,
        "CREATE TABLE e (id INTEGER PRIMARY KEY, pub TEXT, secret TEXT); INSERT INTO e VALUES (1, 'a', 's1'), (2, 'b', 's2');",
      );
      expect(cli(['enable', src, 'e', '--exclude', 'secret']).status).toBe(0);
      const out = path.join(tmp, format === 'jsonl' ? 'x.jsonl' : 'segs');
      expect(cli(['export', src, '--out', out, ...(format === 'segment' ? ['--format', 'segment'] : [])]).status).toBe(0);
      const tgt = path.join(tmp, 'imported.db');
      expect(cli(['import', tgt, out]).status).toBe(0);

      const v = cli(['verify', src, tgt, '--json']);
      expect(v.status, v.stdout + v.stderr).toBe(0);
      const report = JSON.parse(v.stdout) as {
        ok: boolean;
        projections: { name: string; ok: boolean; checked: number; reason?: string }[];
      };
      expect(report.projections).toEqual([expect.objectContaining({ name: 'e', ok: true, checked: 2 })]);

      // Compared for real: an edit of its rows is found.
      runSqliteCli(tgt, "UPDATE e SET pub = 'edited' WHERE id = 2;");
      const edited = cli(['verify', src, tgt, '--json']);
      expect(edited.status).toBe(3);
      expect(JSON.stringify(JSON.parse(edited.stdout))).toContain('"kind":"different"');
    });
});
