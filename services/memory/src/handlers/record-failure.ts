import { errorSignature } from '@ratchet/agent';
import { languageToJSON, type RecordFailureRequest, type RecordFailureResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { LessonKind } from '../adapters/lesson-store';
import { lessonText, type MemoryDeps } from './deps';

/**
 * RecordFailure: stores the failure and its candidate lesson. A lesson with
 * the same error signature and language gets this failure as evidence
 * instead of a duplicate (`lesson_created` false).
 *
 * @throws AppError INVALID_ARGUMENT without task_id or with a lesson lacking a title or body.
 */
export function recordFailureHandler(deps: MemoryDeps) {
  return async (request: RecordFailureRequest): Promise<RecordFailureResponse> => {
    if (request.taskId === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'task_id is empty');
    const draft = request.candidateLesson;
    if (draft !== undefined && (draft.title.trim() === '' || draft.body.trim() === '')) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'candidate_lesson needs a title and a body');
    const error = request.error;
    const signature = draft?.errorSignature || error?.signature || (error === undefined ? '' : errorSignature(error.code, error.message));
    const title = draft?.title.trim() ?? '';
    const body = draft?.body.trim() ?? '';
    const { failureId, lessonId, created } = await deps.store.recordFailure(
      {
        taskId: request.taskId,
        iteration: request.iteration,
        goal: request.goal,
        language: request.language,
        code: error?.code ?? '',
        message: error?.message ?? '',
        signature,
        summary: request.failureSummary,
      },
      draft === undefined ? undefined : { title, body, tags: draft.tags },
      deps.now(),
    );
    if (lessonId !== undefined && created) {
      const [vector] = await deps.embedder.embed([lessonText(title, body, signature)]);
      await deps.vectors.upsert([{ id: lessonId, vector: vector as Float32Array, payload: { kind: LessonKind.LESSON, language: languageToJSON(request.language) } }]);
    }
    const [lesson] = lessonId === undefined ? [] : await deps.store.lessons([lessonId]);
    return { failureId, lesson, lessonCreated: created };
  };
}
