import fs from 'node:fs';
import path from 'node:path';

/** A Python script that runs a SQL script (argv[2]) on a file (argv[1]) with Python's sqlite3: another program's edit of a segment. */
export const EDIT = `
import sqlite3, sys
con = sqlite3.connect(sys.argv[1])
con.executescript(sys.argv[2])
con.commit()
con.close()
`;

/** The segment files of an export folder, in name order (the order they import in). */
export function segmentsOf(folder: string): string[] {
  return fs
    .readdirSync(folder)
    .filter((f) => f.endsWith('.segment'))
    .sort()
    .map((f) => path.join(folder, f));
}
