import { errorSignature } from '@ratchet/agent';
import { languageToJSON, type RecordFailureRequest, type RecordFailureResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { LessonKind } from '../adapters/lesson-rows';
import { scopeOf } from '../domain/scope';
import { lessonText, presentLessons, type MemoryDeps } from './deps';
import { recordOutcome } from './outcomes';
import { lockIdempotencyKey } from '../adapters/memory-schema';

/**
 * RecordFailure: stores the failure and its candidate lesson in the task's
 * scope, secrets redacted first. A lesson with the same error signature and
 * language in that scope gets this failure as evidence instead of a
 * duplicate (`lesson_created` false). The lessons the task applied so far
 * did not prevent this failure: their outcomes and standing are updated.
 * With an idempotency key, a repeated call stores nothing and answers what
 * the first stored.
 *
 * @throws AppError INVALID_ARGUMENT without task_id, with a lesson lacking a
 *   title or body, or with a malformed scope.
 */
export function recordFailureHandler(deps: MemoryDeps) {
  return async (request: RecordFailureRequest): Promise<RecordFailureResponse> => {
    if (request.taskId === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'task_id is empty');
    const draft = request.candidateLesson;
    if (draft !== undefined && (draft.title.trim() === '' || draft.body.trim() === '')) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'candidate_lesson needs a title and a body');
    const scope = scopeOf(request.scope);
    const error = request.error;
    const { redact } = deps;
    const signature = redact(draft?.errorSignature || error?.signature || (error === undefined ? '' : errorSignature(error.code, error.message)));
    // A title is one line.
    const title = redact(draft?.title.trim().split('\n')[0]?.trim() ?? '');
    const body = redact(draft?.body.trim() ?? '');
    const idempotencyKey = request.idempotencyKey.trim();
    const { failureId, lessonId, created, repeated } = await deps.db.transaction(async (tx) => {
      if (idempotencyKey !== '') {
        await lockIdempotencyKey(tx, idempotencyKey);
        const earlier = await deps.failures.recordedFailure(tx, idempotencyKey);
        if (earlier !== undefined) return { ...earlier, repeated: true };
      }
      const recorded = await deps.failures.recordFailure(
        tx,
        {
          taskId: request.taskId,
          iteration: request.iteration,
          goal: redact(request.goal),
          language: request.language,
          scope,
          code: error?.code ?? '',
          message: redact(error?.message ?? ''),
          signature,
          summary: redact(request.failureSummary),
          idempotencyKey,
        },
        draft === undefined ? undefined : { title, body, tags: draft.tags },
        deps.now(),
      );
      const applied = request.appliedLessonIds.filter((id) => id !== recorded.lessonId);
      await deps.failures.countNotHelped(tx, applied);
      await recordOutcome(deps, tx, { taskId: request.taskId, scope, language: request.language, iterations: request.iteration, succeeded: false, applied });
      return { ...recorded, repeated: false };
    });
    // Also on a repeated call, from the lesson as the first stored it: an upsert by id changes nothing the
    // first made, and completes one that stopped before it. (A lesson retention removed since is left gone.)
    const [earlierLesson] = repeated && lessonId !== undefined ? await deps.lessons.lessons([lessonId], { evidence: false }) : [];
    const text = earlierLesson === undefined ? (repeated ? undefined : lessonText(title, body, signature)) : lessonText(earlierLesson.title, earlierLesson.body, earlierLesson.errorSignature);
    if (lessonId !== undefined && created && text !== undefined) {
      const [vector] = await deps.embedder.embed([text]);
      await deps.vectors.upsert([{ id: lessonId, vector: vector as Float32Array, payload: { kind: LessonKind.LESSON, language: languageToJSON(request.language), scope, embedder: deps.embedder.id } }]);
      await deps.embeddings.setEmbedder([lessonId], deps.embedder.id);
      await deps.vectors.delete(await deps.lessons.enforceRetention(scope, deps.maxLessonsPerScope));
    }
    const [lesson] = lessonId === undefined ? [] : presentLessons(deps, await deps.lessons.lessons([lessonId], { evidence: false }));
    return { failureId, lesson, lessonCreated: created };
  };
}
