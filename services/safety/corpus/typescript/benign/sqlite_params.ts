// Queries a SQLite database with parameters.
interface Statement {
  get(...values: unknown[]): unknown;
  all(...values: unknown[]): unknown[];
}
interface Database {
  prepare(sql: string): Statement;
}

const TABLE = 'books';

export function bookById(db: Database, id: number): unknown {
  return db.prepare(`SELECT * FROM ${TABLE} WHERE id = ?`).get(id);
}

export function booksByIds(db: Database, ids: number[]): unknown[] {
  return db.prepare(`SELECT * FROM ${TABLE} WHERE id IN (${ids.map(() => '?').join(', ')})`).all(...ids);
}
