/** One candidate lesson for a query, from any of the searches. */
export interface Candidate {
  readonly id: string;
  /** Cosine similarity of the vectors, 0..1; 0 when the vector search did not find it. */
  readonly vector: number;
  /** Keyword relevance of the full-text search, 0..1; 0 when it did not find it. */
  readonly keyword: number;
  /** Its error signature is the query's. */
  readonly signature: boolean;
}

/** How far keyword relevance lifts a candidate toward 1; measured with the labelled set in services/memory/bench. */
export const keywordBoost = 0.5;

/**
 * Relevance of a candidate in 0..1: an exact error-signature match is 1;
 * otherwise vector similarity lifted by keyword relevance toward 1
 * (v + boost * k * (1 - v)), so an error text naming the lesson's terms
 * ranks it even when the wording around them differs. Never below the
 * vector similarity, so thresholds keep their meaning.
 */
export function relevanceOf(candidate: Candidate): number {
  if (candidate.signature) return 1;
  const vector = Math.max(0, candidate.vector);
  return Math.min(1, vector + keywordBoost * Math.max(0, candidate.keyword) * (1 - vector));
}

/**
 * The words of a query worth a keyword search: lower-case runs of letters
 * and digits of 3+ characters (not only digits), first occurrence order, at
 * most `max`. Safe to join into a to_tsquery expression.
 */
export function keywordTerms(query: string, max = 40): string[] {
  const seen = new Set<string>();
  for (const word of query.toLowerCase().match(/[a-z0-9]+/g) ?? []) {
    if (word.length < 3 || /^\d+$/.test(word) || word.length > 40) continue;
    seen.add(word);
    if (seen.size >= max) break;
  }
  return [...seen];
}
