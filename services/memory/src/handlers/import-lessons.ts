import { languageToJSON, LessonKind as LessonKindProto, type ImportLessonsRequest, type ImportLessonsResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { LessonKind } from '../adapters/lesson-rows';
import { scopeOf } from '../domain/scope';
import { lessonText, type MemoryDeps } from './deps';

/** The export format this service reads and `ratchet lessons export` writes. */
export const LESSON_EXPORT_VERSION = 1;
const maxBatch = 500;

/**
 * ImportLessons: stores exported lessons as they were (ids, evidence,
 * counters, standing), in their own scope or the one given, redacted and
 * embedded with this installation's embedder. A lesson whose id exists is
 * skipped, so importing the same file twice changes nothing.
 *
 * @throws AppError FAILED_PRECONDITION for another format version;
 *   INVALID_ARGUMENT naming the first bad lesson (no id, title or body), for
 *   a batch over 500 or a malformed scope.
 */
export function importLessonsHandler(deps: MemoryDeps) {
  return async (request: ImportLessonsRequest): Promise<ImportLessonsResponse> => {
    if (request.formatVersion !== LESSON_EXPORT_VERSION) {
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `the lessons are in export format ${request.formatVersion}; this version of Ratchet reads format ${LESSON_EXPORT_VERSION}: export them again with a matching version`);
    }
    if (request.lessons.length > maxBatch) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${request.lessons.length} lessons in one batch; send at most ${maxBatch}`);
    const override = request.scope.trim() === '' ? undefined : scopeOf(request.scope);
    request.lessons.forEach((lesson, index) => {
      if (!/^[A-Za-z0-9-]{1,64}$/.test(lesson.id) || lesson.title.trim() === '' || lesson.body.trim() === '') {
        throw new AppError(ErrorCode.INVALID_ARGUMENT, `lesson ${index + 1} of the batch (id ${JSON.stringify(lesson.id.slice(0, 64))}) needs an id of letters, digits and dashes, a title and a body`);
      }
    });
    const existing = await deps.lessons.existing(request.lessons.map((lesson) => lesson.id));
    const fresh = request.lessons.filter((lesson) => !existing.has(lesson.id));
    const now = deps.now();
    const stored = fresh.map((lesson) => ({
      ...lesson,
      title: deps.redact(lesson.title.trim().split('\n')[0] ?? ''),
      body: deps.redact(lesson.body),
      errorSignature: deps.redact(lesson.errorSignature),
      kind: lesson.kind === LessonKindProto.LESSON_KIND_SUCCESS_PATTERN || lesson.tags.includes(LessonKind.SUCCESS_PATTERN) ? LessonKind.SUCCESS_PATTERN : LessonKind.LESSON,
      scope: override ?? scopeOf(lesson.scope),
      evidence: lesson.evidence.map((item) => ({ ...item, failureSummary: deps.redact(item.failureSummary), fixSummary: deps.redact(item.fixSummary) })),
    }));
    await deps.db.transaction(async (tx) => {
      for (const lesson of stored) await deps.lessons.importLesson(tx, { ...lesson, kind: LessonKindProto.LESSON_KIND_UNSPECIFIED }, lesson.kind, lesson.scope, now);
    });
    const vectors = await deps.embedder.embed(stored.map((lesson) => lessonText(lesson.title, lesson.body, lesson.errorSignature)));
    await deps.vectors.upsert(
      stored.map((lesson, index) => ({
        id: lesson.id,
        vector: vectors[index] as Float32Array,
        payload: { kind: lesson.kind, language: languageToJSON(lesson.language), scope: lesson.scope, embedder: deps.embedder.id },
      })),
    );
    await deps.embeddings.setEmbedder(
      stored.map((lesson) => lesson.id),
      deps.embedder.id,
    );
    return { imported: stored.length, skipped: request.lessons.length - stored.length };
  };
}
