import { Language, languageToJSON, type RetrieveLessonsRequest, type RetrieveLessonsResponse, type ScoredLesson } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { LessonKind } from '../adapters/lesson-store';
import { successSlots } from '../domain/success-pattern';
import type { MemoryDeps } from './deps';

const defaultLimit = 5;
const maxLimit = 50;

/**
 * RetrieveLessons: the lessons most similar to `query` (a goal or an error
 * text), an exact `error_signature` match first (score 1), filtered by
 * language when given. Failure lessons and success patterns are ranked
 * apart and share the limit (`successSlots`: success patterns get a third),
 * so a run of stored successes cannot push the reflector's lessons out.
 * Counts each returned lesson as retrieved.
 *
 * @throws AppError INVALID_ARGUMENT for an empty query, a limit outside
 *   0..50 or a min_score outside 0..1.
 */
export function retrieveLessonsHandler(deps: MemoryDeps) {
  return async (request: RetrieveLessonsRequest): Promise<RetrieveLessonsResponse> => {
    if (request.query.trim() === '' && request.errorSignature.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'query is empty; send the goal or the error text to search for');
    if (request.limit < 0 || request.limit > maxLimit) throw new AppError(ErrorCode.INVALID_ARGUMENT, `limit is ${request.limit}; use 1 to ${maxLimit} (0 for ${defaultLimit})`);
    if (!(request.minScore >= 0 && request.minScore <= 1)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `min_score is ${request.minScore}; use 0 to 1`);
    const limit = request.limit === 0 ? defaultLimit : request.limit;
    const lessonScores = new Map<string, number>();
    const patternScores = new Map<string, number>();
    if (request.errorSignature.trim() !== '') {
      for (const id of await deps.store.idsBySignature(request.errorSignature.trim(), request.language, limit)) lessonScores.set(id, 1);
    }
    if (request.query.trim() !== '') {
      const [vector] = await deps.embedder.embed([request.query]);
      const language = request.language === Language.LANGUAGE_UNSPECIFIED ? undefined : languageToJSON(request.language);
      const search = (kind: LessonKind) => deps.vectors.search(vector as Float32Array, { limit, minScore: request.minScore, filter: { kind, ...(language === undefined ? {} : { language }) } });
      const [lessonHits, patternHits] = await Promise.all([search(LessonKind.LESSON), search(LessonKind.SUCCESS_PATTERN)]);
      for (const hit of lessonHits) if (!lessonScores.has(hit.id)) lessonScores.set(hit.id, hit.score);
      for (const hit of patternHits) if (!lessonScores.has(hit.id)) patternScores.set(hit.id, hit.score);
    }
    const best = (scores: Map<string, number>) => [...scores.entries()].sort((left, right) => right[1] - left[1]);
    const [lessonRanked, patternRanked] = [best(lessonScores), best(patternScores)];
    // Each kind has its share; what one kind leaves unused goes to the other.
    const patternCount = Math.min(patternRanked.length, Math.max(successSlots(limit), limit - lessonRanked.length));
    const ranked = [...lessonRanked.slice(0, limit - patternCount), ...patternRanked.slice(0, patternCount)].sort((left, right) => right[1] - left[1]);
    const lessons = await deps.store.retrieved(
      ranked.map(([id]) => id),
      deps.now(),
    );
    const scoreOf = new Map(ranked);
    const result: ScoredLesson[] = lessons.map((lesson) => ({ lesson, score: scoreOf.get(lesson.id) ?? 0 }));
    return { lessons: result };
  };
}
