import type Database from 'better-sqlite3';

/** A better-sqlite3 connection: what every layer passes around (opened by connection.ts). */
export type Db = Database.Database;
