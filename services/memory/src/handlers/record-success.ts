import { languageToJSON, type RecordSuccessRequest, type RecordSuccessResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { LessonKind } from '../adapters/lesson-store';
import { lessonText, type MemoryDeps } from './deps';

/**
 * RecordSuccess: the fix becomes evidence on the lessons of the task's
 * failures, helped lessons are counted, and the success itself is stored as
 * a retrievable `success-pattern` lesson for similar goals.
 *
 * @throws AppError INVALID_ARGUMENT without task_id or goal.
 */
export function recordSuccessHandler(deps: MemoryDeps) {
  return async (request: RecordSuccessRequest): Promise<RecordSuccessResponse> => {
    if (request.taskId === '' || request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'task_id and goal are required');
    const now = deps.now();
    const title = `Worked: ${request.goal.trim().slice(0, 160)}`;
    const body = request.fixSummary.trim() || 'Passed its tests.';
    const { successId, patternId, touched } = await deps.store.db.transaction(async (tx) => {
      const resolved = await deps.store.resolveFailures(tx, request.resolvedFailureIds, now);
      for (const { lessonId, iteration } of resolved) {
        await deps.store.addEvidence(tx, lessonId, { taskId: request.taskId, iteration, failureSummary: '', fixSummary: body }, now);
      }
      const helped = [...new Set(request.helpedLessonIds)];
      await deps.store.countHelped(tx, helped);
      const patternId = await deps.store.createLesson(tx, { kind: LessonKind.SUCCESS_PATTERN, title, body, errorSignature: '', tags: [LessonKind.SUCCESS_PATTERN], language: request.language }, now);
      await deps.store.addEvidence(tx, patternId, { taskId: request.taskId, iteration: request.iteration, failureSummary: '', fixSummary: body }, now);
      const successId = await deps.store.recordSuccess(tx, { taskId: request.taskId, goal: request.goal, language: request.language, fixSummary: body, iterationsTaken: request.iterationsTaken, lessonId: patternId }, now);
      return { successId, patternId, touched: [...new Set([...resolved.map((item) => item.lessonId), ...helped])] };
    });
    const [vector] = await deps.embedder.embed([lessonText(`${title}`, `${request.goal}\n${body}`, '')]);
    await deps.vectors.upsert([{ id: patternId, vector: vector as Float32Array, payload: { kind: LessonKind.SUCCESS_PATTERN, language: languageToJSON(request.language) } }]);
    return { successId, updatedLessons: await deps.store.lessons(touched) };
  };
}
