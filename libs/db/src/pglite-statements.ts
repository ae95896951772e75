import { parse, protocol, type PGlite, type Results } from '@electric-sql/pglite';

/** Postgres' refusal to run a prepared statement whose result changed shape (a table its `SELECT *` reads gained a column): SQLSTATE 0A000 and this message. */
const resultTypeChanged = { code: '0A000', message: /cached plan must not change result type/ };

/**
 * Named prepared statements for PGlite, one per SQL text, kept for the
 * connection. PGlite's `query` sends every statement as the unnamed one, so
 * Postgres parses, analyses and plans the same text again on each call, and
 * in WASM that was about half of the loop's database time (the transition
 * save: about 2.3 of 3.6 ms). Here a text is parsed once and its parameter
 * types kept; each call only binds and executes it, and Postgres plans it
 * again only when that pays (its own choice between custom and generic
 * plans) or the tables changed. The messages and their order are those of
 * PGlite's own `query` (bind, describe, execute, then a sync whatever
 * happened), so errors, transactions and results read the same.
 *
 * The caller holds PGlite's locks (see PgliteDatabase): these calls go under
 * its query lock, and outside a transaction under its transaction lock too.
 * Those lock methods and `_checkReady` are PGlite's own (0.5, pinned in
 * package.json); the statement tests fail if an upgrade changes them.
 */
export class PreparedStatements {
  /** By SQL text, least recently used first. */
  private readonly statements = new Map<string, { readonly name: string; readonly types: readonly number[] }>();
  private made = 0;

  constructor(
    private readonly db: PGlite,
    /** Statements kept at most; the least recently used one is closed to make room. */
    private readonly limit = 256,
  ) {}

  /** Runs `sql` with `params` as its prepared statement, preparing it first if needed. */
  async run<R>(sql: string, params: readonly unknown[]): Promise<Results<R>> {
    try {
      return await this.execute<R>(sql, params);
    } catch (error) {
      // A table a prepared statement reads changed shape: prepare it again (outside a transaction; inside one, the error has ended it).
      const { code, message } = error as { code?: string; message?: string };
      if (code !== resultTypeChanged.code || !resultTypeChanged.message.test(message ?? '') || !this.statements.has(sql) || this.db.isInTransaction()) throw error;
      await this.forget(sql);
      return this.execute<R>(sql, params);
    }
  }

  /** Closes every statement, e.g. after a schema change. */
  async clear(): Promise<void> {
    for (const sql of [...this.statements.keys()]) await this.forget(sql);
  }

  private async execute<R>(sql: string, params: readonly unknown[]): Promise<Results<R>> {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = await this.prepare(sql);
    } else {
      // Most recently used last.
      this.statements.delete(sql);
      this.statements.set(sql, statement);
    }
    const values = params.map((param, index) => {
      if (param === null || param === undefined) return null;
      const serialise = this.db.serializers[statement.types[index] ?? 0];
      return serialise === undefined ? String(param) : serialise(param);
    });
    const messages = await this.exchange([
      protocol.serialize.bind({ statement: statement.name, values }),
      protocol.serialize.describe({ type: 'P' }),
      protocol.serialize.execute({}),
    ]);
    if (!this.db.isInTransaction()) await this.db.syncToFs();
    return parse.parseResults(messages, this.db.parsers)[0] as Results<R>;
  }

  private async prepare(sql: string): Promise<{ name: string; types: readonly number[] }> {
    while (this.statements.size >= this.limit) await this.forget(this.statements.keys().next().value as string);
    this.made += 1;
    const name = `ratchet_${this.made}`;
    const messages = await this.exchange([protocol.serialize.parse({ name, text: sql }), protocol.serialize.describe({ type: 'S', name })]);
    const statement = { name, types: parse.parseDescribeStatementResults(messages) };
    this.statements.set(sql, statement);
    return statement;
  }

  private async forget(sql: string): Promise<void> {
    const statement = this.statements.get(sql);
    if (statement === undefined) return;
    this.statements.delete(sql);
    await this.exchange([protocol.serialize.close({ type: 'S', name: statement.name })]);
  }

  /** Sends `messages` in order and then a sync, even when one fails (Postgres skips the rest until the sync); throws the first failure. */
  private async exchange(messages: readonly Uint8Array[]) {
    const replies = [];
    try {
      for (const message of messages) replies.push(...(await this.db.execProtocolStream(message, { syncToFs: false })));
    } finally {
      replies.push(...(await this.db.execProtocolStream(protocol.serialize.sync(), { syncToFs: false })));
    }
    return replies;
  }
}
