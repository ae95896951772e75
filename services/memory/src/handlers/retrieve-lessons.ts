import { Language, languageToJSON, type RetrieveLessonsRequest, type RetrieveLessonsResponse, type ScoredLesson } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { LessonKind } from '../adapters/lesson-rows';
import { keywordPlan, relevanceOf, vectorWeightOf, type Candidate } from '../domain/ranking';
import { searchScopes } from '../domain/scope';
import { isRetired, weightOf } from '../domain/standing';
import { successSlots } from '../domain/success-pattern';
import { presentLessons, type MemoryDeps } from './deps';

const defaultLimit = 5;
const maxLimit = 50;
/** Each search fetches this many times the limit, so retired lessons and the other kind's share can be dropped. */
const overFetch = 3;

/**
 * RetrieveLessons: the lessons most relevant to `query` (a goal or an error
 * text) in the task's scope and the global one (or its own only), hybrid
 * ranked: an exact `error_signature` match first, then the weighted mean of
 * vector similarity and keyword relevance (words weighed by rarity,
 * `keywordPlan`); with a lexical embedder the candidates come from the
 * keywords and the signature and only their vectors are scored, with a model
 * embedder the nearest vectors are candidates too. Each relevance is weighted by the lesson's
 * standing and age, and retired lessons are not offered. Failure lessons and
 * success patterns are ranked apart and share the limit (`successSlots`:
 * success patterns get a third), so a run of stored successes cannot push
 * the reflector's lessons out. Counts each returned lesson as retrieved,
 * once per `idempotency_key` when the request carries one.
 *
 * @throws AppError INVALID_ARGUMENT for an empty query, a limit outside
 *   0..50, a min_score outside 0..1 or a malformed scope.
 */
export function retrieveLessonsHandler(deps: MemoryDeps) {
  return async (request: RetrieveLessonsRequest): Promise<RetrieveLessonsResponse> => {
    if (request.query.trim() === '' && request.errorSignature.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'query is empty; send the goal or the error text to search for');
    if (request.limit < 0 || request.limit > maxLimit) throw new AppError(ErrorCode.INVALID_ARGUMENT, `limit is ${request.limit}; use 1 to ${maxLimit} (0 for ${defaultLimit})`);
    if (!(request.minScore >= 0 && request.minScore <= 1)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `min_score is ${request.minScore}; use 0 to 1`);
    const limit = request.limit === 0 ? defaultLimit : request.limit;
    const scopes = searchScopes(request.scope, request.scopeOnly);
    const language = request.language === Language.LANGUAGE_UNSPECIFIED ? undefined : languageToJSON(request.language);
    const candidates = new Map<string, Candidate & { kind: LessonKind }>();
    const add = (id: string, kind: LessonKind, found: Partial<Candidate>) => {
      const known = candidates.get(id) ?? { id, kind, vector: 0, keyword: 0, signature: false };
      candidates.set(id, { ...known, ...found });
    };
    const signature = request.errorSignature.trim();
    if (signature !== '') {
      for (const id of await deps.search.idsBySignature(signature, request.language, scopes, limit)) add(id, LessonKind.LESSON, { signature: true });
    }
    if (request.query.trim() !== '') {
      const [vector] = (await deps.embedder.embed([request.query])) as [Float32Array];
      const terms = await deps.search.termCounts(request.query);
      const searches: Promise<void>[] = [
        deps.search
          .keywordCandidates(keywordPlan(terms.counts, terms.lessons), { language: request.language, scopes }, limit * overFetch)
          .then((hits) => hits.forEach((hit) => add(hit.id, hit.kind, { keyword: hit.score }))),
      ];
      // A lexical embedder's vectors find nothing the words do not: its candidates come from the keywords and signatures.
      if (deps.searchVectors ?? !deps.embedder.lexical) {
        for (const kind of [LessonKind.LESSON, LessonKind.SUCCESS_PATTERN]) {
          const filter = { kind, scopes, ...(language === undefined ? {} : { language }) };
          searches.push(deps.vectors.search(vector, { limit: limit * overFetch, minScore: 0, embedder: deps.embedder.id, filter }).then((hits) => hits.forEach((hit) => add(hit.id, kind, { vector: hit.score }))));
        }
      }
      await Promise.all(searches);
      const unscored = [...candidates.values()].filter((candidate) => candidate.vector === 0);
      const scores = await deps.vectors.scores(vector, unscored.map((candidate) => candidate.id), deps.embedder.id);
      for (const candidate of unscored) add(candidate.id, candidate.kind, { vector: scores.get(candidate.id) ?? 0 });
    }
    const vectorWeight = deps.vectorWeight ?? vectorWeightOf(deps.embedder);
    const standings = await deps.outcomes.standings([...candidates.keys()]);
    const now = deps.now();
    const ranked = [...candidates.values()].flatMap((candidate) => {
      const relevance = relevanceOf(candidate, vectorWeight);
      const standing = standings.get(candidate.id);
      if (standing === undefined || relevance < request.minScore) return [];
      const weight = weightOf(standing.status, standing.helpfulness, standing.lastActiveAt, now, deps.standing);
      return isRetired(weight, deps.standing) ? [] : [{ id: candidate.id, kind: candidate.kind, score: relevance * weight }];
    });
    const best = (kind: LessonKind) => ranked.filter((item) => item.kind === kind).sort((left, right) => right.score - left.score);
    const [lessonRanked, patternRanked] = [best(LessonKind.LESSON), best(LessonKind.SUCCESS_PATTERN)];
    // Each kind has its share; what one kind leaves unused goes to the other.
    const patternCount = Math.min(patternRanked.length, Math.max(successSlots(limit), limit - lessonRanked.length));
    const chosen = [...lessonRanked.slice(0, limit - patternCount), ...patternRanked.slice(0, patternCount)].sort((left, right) => right.score - left.score);
    const lessons = presentLessons(deps, await deps.search.retrieved(chosen.map((item) => item.id), now, request.idempotencyKey));
    const scoreOf = new Map(chosen.map((item) => [item.id, item.score]));
    const result: ScoredLesson[] = lessons.map((lesson) => ({ lesson, score: scoreOf.get(lesson.id) ?? 0 }));
    return { lessons: result };
  };
}
