import { languageToJSON, type RecordSuccessRequest, type RecordSuccessResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { LessonKind } from '../adapters/lesson-rows';
import { scopeOf } from '../domain/scope';
import { duplicateScore, successTitle } from '../domain/success-pattern';
import { lessonText, presentLessons, type MemoryDeps } from './deps';
import { recordOutcome } from './outcomes';
import { lockIdempotencyKey } from '../adapters/memory-schema';

/**
 * RecordSuccess: the fix becomes evidence on the lessons of the task's
 * failures, the lessons it applied are credited (their outcomes and standing
 * updated: a candidate applied by a later task that succeeded is promoted),
 * and the success itself is stored in the task's scope as a retrievable
 * `success-pattern` lesson: what worked, in the loop's words (the approach,
 * or the reflections' fixes), found by that text alone. The goal's wording
 * is kept out of the title and the vector, so tasks that merely share
 * phrasing ("Implement this function in solution.py") do not retrieve each
 * other's records. A pattern nearly the same as a stored one of the same
 * language and scope is merged into it as evidence. Secrets are redacted
 * before anything is stored.
 *
 * With an idempotency key, a repeated call stores nothing and answers what
 * the first stored.
 *
 * @throws AppError INVALID_ARGUMENT without task_id or goal, or with a malformed scope.
 */
export function recordSuccessHandler(deps: MemoryDeps) {
  return async (request: RecordSuccessRequest): Promise<RecordSuccessResponse> => {
    if (request.taskId === '' || request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'task_id and goal are required');
    const now = deps.now();
    const scope = scopeOf(request.scope);
    const idempotencyKey = request.idempotencyKey.trim();
    const answerAgain = async (earlier: { successId: string; updatedLessonIds: readonly string[] }): Promise<RecordSuccessResponse> => ({
      successId: earlier.successId,
      updatedLessons: presentLessons(deps, await deps.lessons.lessons(earlier.updatedLessonIds, { evidence: false })),
    });
    // A repeated call answers what the first stored, before any work (the search below) is done again.
    const known = idempotencyKey === '' ? undefined : await deps.successes.recordedSuccess(deps.db, idempotencyKey);
    if (known !== undefined) return answerAgain(known);
    const body = deps.redact(request.fixSummary.trim() || 'Passed its tests.');
    const title = successTitle(body);
    const language = languageToJSON(request.language);
    const [vector] = await deps.embedder.embed([lessonText(title, body, '')]);
    const [twin] = await deps.vectors.search(vector as Float32Array, {
      limit: 1,
      minScore: duplicateScore,
      embedder: deps.embedder.id,
      filter: { kind: LessonKind.SUCCESS_PATTERN, language, scopes: [scope] },
    });
    type Stored = { earlier: { successId: string; updatedLessonIds: readonly string[] } } | { successId: string; patternId: string; created: boolean; touched: string[] };
    const stored = await deps.db.transaction(async (tx): Promise<Stored> => {
      if (idempotencyKey !== '') {
        // A call racing the one it repeats waits for it here, then answers what it stored.
        await lockIdempotencyKey(tx, idempotencyKey);
        const earlier = await deps.successes.recordedSuccess(tx, idempotencyKey);
        if (earlier !== undefined) return { earlier };
      }
      const resolved = await deps.failures.resolveFailures(tx, request.resolvedFailureIds, now);
      for (const { lessonId, iteration } of resolved) {
        await deps.lessons.addEvidence(tx, lessonId, { taskId: request.taskId, iteration, failureSummary: '', fixSummary: body }, now);
      }
      const helped = [...new Set(request.helpedLessonIds)];
      await deps.successes.countHelped(tx, helped);
      await recordOutcome(deps, tx, { taskId: request.taskId, scope, language: request.language, iterations: request.iterationsTaken, succeeded: true, applied: helped });
      const patternId =
        twin?.id ??
        (await deps.lessons.createLesson(tx, { kind: LessonKind.SUCCESS_PATTERN, scope, originTaskId: request.taskId, title, body, errorSignature: '', tags: [LessonKind.SUCCESS_PATTERN], language: request.language }, now));
      await deps.lessons.addEvidence(tx, patternId, { taskId: request.taskId, iteration: request.iteration, failureSummary: '', fixSummary: body }, now);
      const touched = [...new Set([...resolved.map((item) => item.lessonId), ...helped, ...(twin === undefined ? [] : [twin.id])])];
      const successId = await deps.successes.recordSuccess(
        tx,
        { taskId: request.taskId, goal: deps.redact(request.goal), language: request.language, fixSummary: body, iterationsTaken: request.iterationsTaken, lessonId: patternId, idempotencyKey, updatedLessonIds: touched },
        now,
      );
      return { successId, patternId, created: twin === undefined, touched };
    });
    if ('earlier' in stored) return answerAgain(stored.earlier);
    const { successId, patternId, touched, created } = stored;
    if (created) {
      await deps.vectors.upsert([{ id: patternId, vector: vector as Float32Array, payload: { kind: LessonKind.SUCCESS_PATTERN, language, scope, embedder: deps.embedder.id } }]);
      await deps.embeddings.setEmbedder([patternId], deps.embedder.id);
      await deps.vectors.delete(await deps.lessons.enforceRetention(scope, deps.maxLessonsPerScope));
    }
    return { successId, updatedLessons: presentLessons(deps, await deps.lessons.lessons(touched, { evidence: false })) };
  };
}
