/** One candidate lesson for a query, from any of the searches. */
export interface Candidate {
  readonly id: string;
  /** Cosine similarity of the vectors, 0..1; 0 when the lesson has no vector of the query's embedder. */
  readonly vector: number;
  /** Keyword relevance, 0..1: the share of the query's word weight the lesson holds; 0 when it shares no word. */
  readonly keyword: number;
  /** Its error signature is the query's. */
  readonly signature: boolean;
}

/**
 * How much vector similarity counts against keyword relevance. The hashing
 * embedder's vectors are made of the same words (plus their character
 * n-grams), so they add little the rarity-weighted keywords do not already
 * say: on the labelled set in services/memory/bench the top 3 share is the
 * same for every weight from 0 to 0.65 and lower at 0.8; 0.35 keeps the
 * n-gram evidence for words spelt differently. A model embedder's vector
 * carries meaning the words do not (synonyms, paraphrase) and counts for
 * more; its 0.7 is not measured here, since no model endpoint is reachable.
 */
export function vectorWeightOf(embedder: { readonly lexical: boolean }): number {
  return embedder.lexical ? 0.35 : 0.7;
}

/**
 * Relevance of a candidate in 0..1: an exact error-signature match is 1;
 * otherwise the weighted mean of vector similarity and keyword relevance.
 */
export function relevanceOf(candidate: Candidate, vectorWeight: number): number {
  if (candidate.signature) return 1;
  return Math.min(1, vectorWeight * Math.max(0, candidate.vector) + (1 - vectorWeight) * Math.max(0, candidate.keyword));
}

/** A word of the query as the search column stems it, and how many stored lessons hold it. */
export interface TermCount {
  readonly lexeme: string;
  readonly lessons: number;
}

/** How a keyword search runs: the words whose lessons become candidates, and the weight of every word that scores them. */
export interface KeywordPlan {
  /** The rarest words, whose lessons are read: together held by at most the budget's lessons (at least one word). */
  readonly searched: readonly string[];
  /** Words that score a candidate, rarest first, each with its inverse document frequency. */
  readonly scored: readonly { readonly lexeme: string; readonly weight: number }[];
  /** Sum of the scored words' weights: a lesson holding all of them has keyword relevance 1. */
  readonly total: number;
}

/** Most lessons a keyword search reads (the summed document counts of the words it searches). */
export const defaultReadBudget = 300;
/** Most words that score a candidate: the rarest; an error output can have hundreds, the common ones weigh little. */
export const maxScoredTerms = 48;

/**
 * Plans a keyword search over `lessons` stored lessons: words no lesson
 * holds are dropped; each remaining word weighs its BM25 inverse document
 * frequency, ln(1 + (N - n + 0.5) / (n + 0.5)), so a word most lessons share
 * ("test", "function") counts for little and a rare one for much; and only
 * the rarest words are searched (their lessons read), up to `budget` lessons
 * in all, since a lesson that shares only common words with the query cannot
 * outrank one that shares a rare word unless it shares many. That keeps a
 * search over 100k lessons to a few hundred rows read.
 */
export function keywordPlan(counts: readonly TermCount[], lessons: number, budget = defaultReadBudget): KeywordPlan {
  const held = [...new Map(counts.filter((count) => count.lessons > 0).map((count) => [count.lexeme, count])).values()].sort(
    (left, right) => left.lessons - right.lessons || (left.lexeme < right.lexeme ? -1 : left.lexeme > right.lexeme ? 1 : 0),
  );
  const total = Math.max(lessons, held.at(-1)?.lessons ?? 0);
  const searched: string[] = [];
  let read = 0;
  for (const term of held) {
    if (searched.length > 0 && read + term.lessons > budget) break;
    searched.push(term.lexeme);
    read += term.lessons;
  }
  const scored = held.slice(0, maxScoredTerms).map((term) => ({ lexeme: term.lexeme, weight: Math.log(1 + (total - term.lessons + 0.5) / (term.lessons + 0.5)) }));
  return { searched, scored, total: scored.reduce((sum, term) => sum + term.weight, 0) };
}

/**
 * A tsquery matching one stemmed word exactly as stored (no second
 * stemming): quoted, with quotes doubled and backslashes escaped.
 */
export function lexemeQuery(lexeme: string): string {
  return `'${lexeme.replaceAll('\\', '\\\\').replaceAll("'", "''")}'`;
}
