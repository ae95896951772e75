import type { Database } from '@ratchet/db';

/**
 * Which embedder made each lesson's vector (memory.lessons.embedder): the
 * queue of lessons to (re-)embed after the embedder changed, and the
 * bookkeeping once their vectors are stored.
 */
export class EmbeddingQueue {
  constructor(private readonly db: Database) {}

  /** Records which embedder made the lessons' vectors. */
  async setEmbedder(ids: readonly string[], embedder: string): Promise<void> {
    if (ids.length === 0) return;
    await this.db.query('UPDATE memory.lessons SET embedder = $2 WHERE id = ANY($1::text[])', [[...ids], embedder]);
  }

  /** Up to `limit` lessons whose vector is not from `embedder`, with the text to embed and the payload to store. */
  async toEmbed(embedder: string, limit: number): Promise<{ id: string; kind: string; language: string; scope: string; title: string; body: string; errorSignature: string }[]> {
    const result = await this.db.query<{ id: string; kind: string; language: string; scope: string; title: string; body: string; error_signature: string }>(
      'SELECT id, kind, language, scope, title, body, error_signature FROM memory.lessons WHERE embedder <> $1 ORDER BY created_at, id LIMIT $2',
      [embedder, limit],
    );
    return result.rows.map((row) => ({ id: row.id, kind: row.kind, language: row.language, scope: row.scope, title: row.title, body: row.body, errorSignature: row.error_signature }));
  }

  /** Up to `limit` ids of lessons whose vector is from `embedder`, in id order after `afterId` (to page through them). */
  async embeddedWith(embedder: string, afterId: string, limit: number): Promise<string[]> {
    const result = await this.db.query<{ id: string }>('SELECT id FROM memory.lessons WHERE embedder = $1 AND id > $2 ORDER BY id LIMIT $3', [embedder, afterId, limit]);
    return result.rows.map((row) => row.id);
  }

  /** How many lessons have no vector from `embedder`. */
  async countToEmbed(embedder: string): Promise<number> {
    const result = await this.db.query<{ count: string }>('SELECT count(*) AS count FROM memory.lessons WHERE embedder <> $1', [embedder]);
    return Number(result.rows[0]?.count ?? 0);
  }
}
