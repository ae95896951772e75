import { migrate, type Database } from '@ratchet/db';
import type { VectorHit, VectorPoint, VectorSearch, VectorStore } from '../domain/vector-store';

const literal = (vector: Float32Array) => `[${Array.from(vector, (value) => (Number.isFinite(value) ? value : 0)).join(',')}]`;

const migrations = [
  {
    id: '0001_vectors',
    // Untyped vector column: the dimension belongs to the embedder, not the schema.
    sql: 'CREATE EXTENSION IF NOT EXISTS vector; CREATE TABLE vectors (id text PRIMARY KEY, kind text NOT NULL, language text NOT NULL, embedding vector NOT NULL);',
  },
  {
    // Scopes keep projects apart; the embedder id keeps incomparable vectors apart. Old points were made by the hashing embedder.
    id: '0002_scope_embedder',
    sql: `ALTER TABLE vectors ADD COLUMN scope text NOT NULL DEFAULT 'global', ADD COLUMN embedder text NOT NULL DEFAULT 'hashing-v1-512';
          CREATE INDEX vectors_filter ON vectors (embedder, kind, scope);`,
  },
  {
    // Search reads every vector of the embedder, and one of 512 dimensions (2 KB) went to TOAST, a lookup each: up to
    // about 2,000 dimensions they now stay in the row, which made search over 30k vectors 3.4 times faster in PGlite.
    // Existing rows are rewritten to move in (a new value, not the old TOAST pointer).
    id: '0003_vectors_in_row',
    sql: `ALTER TABLE vectors SET (toast_tuple_target = 8160);
          UPDATE vectors SET embedding = embedding::real[]::vector;`,
  },
];

/**
 * VectorStore on pgvector (PGlite in embedded mode) in its own schema,
 * `memory_vectors`, so the lesson metadata works on Postgres without the
 * extension. Cosine similarity is 1 - (a <=> b).
 */
export class PgVectorStore implements VectorStore {
  private constructor(private readonly db: Database) {}

  /**
   * Creates the table if needed.
   *
   * @throws AppError when the database lacks pgvector (open PGlite with `vector: true`).
   */
  static async open(db: Database): Promise<PgVectorStore> {
    await migrate(db, 'memory_vectors', migrations);
    // PGlite has no autovacuum: without statistics the planner takes the embedder filter for a few rows and reads its
    // whole index to score a dozen candidates by id (6 ms instead of 0.3 at 100k). Sampled, so cheap on Postgres too.
    await db.query('ANALYZE memory_vectors.vectors');
    return new PgVectorStore(db);
  }

  async upsert(points: readonly VectorPoint[]): Promise<void> {
    for (const point of points) {
      await this.db.query(
        `INSERT INTO memory_vectors.vectors (id, kind, language, scope, embedder, embedding) VALUES ($1, $2, $3, $4, $5, $6::vector)
         ON CONFLICT (id) DO UPDATE SET kind = EXCLUDED.kind, language = EXCLUDED.language, scope = EXCLUDED.scope, embedder = EXCLUDED.embedder, embedding = EXCLUDED.embedding`,
        [point.id, point.payload.kind, point.payload.language, point.payload.scope, point.payload.embedder, literal(point.vector)],
      );
    }
  }

  /**
   * Exact nearest points: one distance per row of the embedder that passes
   * the filters, then the minimum score on the nearest `limit` (the same
   * result as filtering first, since score falls with distance; in the
   * WHERE clause it cost a second distance per row, a third of the time).
   */
  async search(vector: Float32Array, options: VectorSearch): Promise<VectorHit[]> {
    const scopes = options.filter?.scopes;
    const result = await this.db.query<{ id: string; kind: string; language: string; scope: string; embedder: string; score: number }>(
      `SELECT id, kind, language, scope, embedder, 1 - distance AS score FROM (
         SELECT id, kind, language, scope, embedder, embedding <=> $1::vector AS distance FROM memory_vectors.vectors
         WHERE embedder = $6 AND ($2 = '' OR kind = $2) AND ($3 = '' OR language = $3) AND ($7::text[] IS NULL OR scope = ANY($7::text[]))
         ORDER BY distance LIMIT $5
       ) nearest
       WHERE 1 - distance >= $4 ORDER BY distance`,
      [literal(vector), options.filter?.kind ?? '', options.filter?.language ?? '', options.minScore, options.limit, options.embedder, scopes === undefined ? null : [...scopes]],
    );
    return result.rows.map((row) => ({ id: row.id, score: Number(row.score), payload: { kind: row.kind, language: row.language, scope: row.scope, embedder: row.embedder } }));
  }

  async scores(vector: Float32Array, ids: readonly string[], embedder: string): Promise<Map<string, number>> {
    if (ids.length === 0) return new Map();
    const result = await this.db.query<{ id: string; score: number }>('SELECT id, 1 - (embedding <=> $1::vector) AS score FROM memory_vectors.vectors WHERE id = ANY($2::text[]) AND embedder = $3', [
      literal(vector),
      [...ids],
      embedder,
    ]);
    return new Map(result.rows.map((row) => [row.id, Number(row.score)]));
  }

  async missing(ids: readonly string[], embedder: string): Promise<string[]> {
    if (ids.length === 0) return [];
    const found = await this.db.query<{ id: string }>('SELECT id FROM memory_vectors.vectors WHERE id = ANY($1::text[]) AND embedder = $2', [[...ids], embedder]);
    const have = new Set(found.rows.map((row) => row.id));
    return ids.filter((id) => !have.has(id));
  }

  async delete(ids: readonly string[]): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query('DELETE FROM memory_vectors.vectors WHERE id = ANY($1::text[])', [[...ids]]);
  }
}
