/** Rows of a query and how many rows it touched. */
export interface QueryResult<R> {
  readonly rows: R[];
  readonly rowCount: number;
}

/** Anything SQL can be sent to: a database or an open transaction. */
export interface Queryable {
  /**
   * Runs one statement with `$1`-style parameters.
   *
   * @throws AppError ALREADY_EXISTS for a unique violation (23505),
   *   FAILED_PRECONDITION for other integrity violations (23xxx), UNAVAILABLE
   *   (retryable) when the connection is lost, INTERNAL otherwise; the
   *   Postgres error (with its SQLSTATE, for the log) is the cause, never the message.
   */
  query<R = Record<string, unknown>>(sql: string, params?: readonly unknown[]): Promise<QueryResult<R>>;
  /** Runs a script of several statements without parameters (migrations). Throws as `query`. */
  execute(sql: string): Promise<void>;
}

/** Postgres (through pg) or PGlite behind one interface, so the same queries serve both modes. */
export interface Database extends Queryable {
  readonly kind: 'pglite' | 'postgres';
  /** Runs fn in one transaction; commits when it resolves, rolls back when it throws (and rethrows). */
  transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T>;
  close(): Promise<void>;
}
