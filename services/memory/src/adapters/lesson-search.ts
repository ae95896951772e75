import type { Language, Lesson } from '@ratchet/contracts';
import type { Database } from '@ratchet/db';
import { lexemeQuery, type KeywordPlan, type TermCount } from '../domain/ranking';
import { inOrder, languageKey, noEvidenceColumn, type LessonKind, type LessonRow } from './lesson-rows';

/**
 * Finding lessons for retrieval: by error signature, by keyword (term counts
 * and scored candidates), and counting those returned as retrieved.
 */
export class LessonSearch {
  constructor(private readonly db: Database) {}

  /**
   * Counts the lessons as retrieved and returns them, without their evidence
   * (the loop reads none; see `presentLessons`), in the order of `ids`: one
   * statement. With an `idempotencyKey` they are counted only by the first
   * call that brings the key (the key is claimed in the same statement, so
   * two racing calls count once); a repeat only reads them. Keys older than a
   * day are dropped on the way.
   */
  async retrieved(ids: readonly string[], now: Date, idempotencyKey = ''): Promise<Lesson[]> {
    if (ids.length === 0) return [];
    const count = `UPDATE memory.lessons l SET times_retrieved = times_retrieved + 1, last_retrieved_at = $2 WHERE l.id = ANY($1::text[])`;
    if (idempotencyKey === '') return inOrder(ids, (await this.db.query<LessonRow>(`${count} RETURNING l.*, ${noEvidenceColumn}`, [[...ids], now])).rows);
    const counted = await this.db.query<LessonRow>(
      `WITH claimed AS (
         INSERT INTO memory.retrievals (idempotency_key, created_at) VALUES ($3, $2) ON CONFLICT (idempotency_key) DO NOTHING RETURNING idempotency_key
       ), pruned AS (
         DELETE FROM memory.retrievals WHERE created_at < $2::timestamptz - interval '1 day'
       )
       ${count} AND EXISTS (SELECT 1 FROM claimed) RETURNING l.*, ${noEvidenceColumn}`,
      [[...ids], now, idempotencyKey],
    );
    if (counted.rows.length > 0) return inOrder(ids, counted.rows);
    return inOrder(ids, (await this.db.query<LessonRow>(`SELECT l.*, ${noEvidenceColumn} FROM memory.lessons l WHERE l.id = ANY($1::text[])`, [[...ids]])).rows);
  }

  /** Signature matches for retrieval (exact, same language unless unspecified, in `scopes`). */
  async idsBySignature(signature: string, language: Language, scopes: readonly string[], limit: number): Promise<string[]> {
    const result = await this.db.query<{ id: string }>(
      `SELECT id FROM memory.lessons WHERE error_signature = $1 AND ($2 = '' OR language = $2) AND scope = ANY($3::text[]) ORDER BY times_helped DESC, created_at DESC LIMIT $4`,
      [signature, languageKey(language), [...scopes], limit],
    );
    return result.rows.map((row) => row.id);
  }

  /** The query's words as the search column stems them, with how many lessons hold each, and how many lessons there are: one statement. */
  async termCounts(query: string): Promise<{ counts: TermCount[]; lessons: number }> {
    const result = await this.db.query<{ lexeme: string; lessons: number | null; total: number | null }>(
      `SELECT q.lexeme, t.lessons, (SELECT lessons FROM memory.term_totals) AS total
       FROM unnest(tsvector_to_array(to_tsvector('english', $1))) q(lexeme) LEFT JOIN memory.terms t ON t.lexeme = q.lexeme`,
      [query],
    );
    return { counts: result.rows.map((row) => ({ lexeme: row.lexeme, lessons: Number(row.lessons ?? 0) })), lessons: Number(result.rows[0]?.total ?? 0) };
  }

  /**
   * The keyword half of hybrid ranking: lessons in `scopes` (and `language`
   * or any) holding one of the plan's searched words, each scored by the
   * weights of the plan's words it holds over their total (0..1), the best
   * `limit` of each kind.
   */
  async keywordCandidates(plan: KeywordPlan, filter: { language: Language; scopes: readonly string[] }, limit: number): Promise<{ id: string; kind: LessonKind; score: number }[]> {
    if (plan.searched.length === 0 || plan.total <= 0) return [];
    const result = await this.db.query<{ id: string; kind: LessonKind; score: number }>(
      `SELECT id, kind, score FROM (
         SELECT id, kind, score, row_number() OVER (PARTITION BY kind ORDER BY score DESC, id) AS place FROM (
           SELECT id, kind, (SELECT coalesce(sum(q.weight), 0) FROM unnest($2::tsquery[], $3::float8[]) q(word, weight) WHERE search @@ q.word) AS score
           FROM memory.lessons WHERE search @@ $1::tsquery AND ($4 = '' OR language = $4 OR language = 'LANGUAGE_UNSPECIFIED') AND scope = ANY($5::text[])
         ) matched
       ) ranked WHERE place <= $6`,
      [
        plan.searched.map(lexemeQuery).join(' | '),
        plan.scored.map((term) => lexemeQuery(term.lexeme)),
        plan.scored.map((term) => term.weight),
        languageKey(filter.language),
        [...filter.scopes],
        limit,
      ],
    );
    return result.rows.map((row) => ({ id: row.id, kind: row.kind, score: Math.min(1, Number(row.score) / plan.total) }));
  }
}
