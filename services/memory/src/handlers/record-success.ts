import { languageToJSON, type RecordSuccessRequest, type RecordSuccessResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { LessonKind } from '../adapters/lesson-store';
import { duplicateScore, successTitle } from '../domain/success-pattern';
import { lessonText, type MemoryDeps } from './deps';

/**
 * RecordSuccess: the fix becomes evidence on the lessons of the task's
 * failures, helped lessons are counted, and the success itself is stored as
 * a retrievable `success-pattern` lesson: what worked, in the loop's words
 * (the approach, or the reflections' fixes), found by that text alone. The
 * goal's wording is kept out of the title and the vector, so tasks that
 * merely share phrasing ("Implement this function in solution.py") do not
 * retrieve each other's records. A pattern nearly the same as a stored one
 * of the same language is merged into it as evidence.
 *
 * @throws AppError INVALID_ARGUMENT without task_id or goal.
 */
export function recordSuccessHandler(deps: MemoryDeps) {
  return async (request: RecordSuccessRequest): Promise<RecordSuccessResponse> => {
    if (request.taskId === '' || request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'task_id and goal are required');
    const now = deps.now();
    const body = request.fixSummary.trim() || 'Passed its tests.';
    const title = successTitle(body);
    const language = languageToJSON(request.language);
    const [vector] = await deps.embedder.embed([lessonText(title, body, '')]);
    const [twin] = await deps.vectors.search(vector as Float32Array, { limit: 1, minScore: duplicateScore, filter: { kind: LessonKind.SUCCESS_PATTERN, language } });
    const { successId, patternId, touched, created } = await deps.store.db.transaction(async (tx) => {
      const resolved = await deps.store.resolveFailures(tx, request.resolvedFailureIds, now);
      for (const { lessonId, iteration } of resolved) {
        await deps.store.addEvidence(tx, lessonId, { taskId: request.taskId, iteration, failureSummary: '', fixSummary: body }, now);
      }
      const helped = [...new Set(request.helpedLessonIds)];
      await deps.store.countHelped(tx, helped);
      const patternId = twin?.id ?? (await deps.store.createLesson(tx, { kind: LessonKind.SUCCESS_PATTERN, title, body, errorSignature: '', tags: [LessonKind.SUCCESS_PATTERN], language: request.language }, now));
      await deps.store.addEvidence(tx, patternId, { taskId: request.taskId, iteration: request.iteration, failureSummary: '', fixSummary: body }, now);
      const successId = await deps.store.recordSuccess(tx, { taskId: request.taskId, goal: request.goal, language: request.language, fixSummary: body, iterationsTaken: request.iterationsTaken, lessonId: patternId }, now);
      return { successId, patternId, created: twin === undefined, touched: [...new Set([...resolved.map((item) => item.lessonId), ...helped, ...(twin === undefined ? [] : [twin.id])])] };
    });
    if (created) await deps.vectors.upsert([{ id: patternId, vector: vector as Float32Array, payload: { kind: LessonKind.SUCCESS_PATTERN, language } }]);
    return { successId, updatedLessons: await deps.store.lessons(touched) };
  };
}
