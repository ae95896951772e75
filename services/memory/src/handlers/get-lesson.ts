import type { GetLessonRequest, GetLessonResponse, ListLessonsRequest, ListLessonsResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { MemoryDeps } from './deps';

/**
 * GetLesson: one lesson with its evidence and statistics.
 *
 * @throws AppError NOT_FOUND naming the id.
 */
export function getLessonHandler(deps: MemoryDeps) {
  return async (request: GetLessonRequest): Promise<GetLessonResponse> => {
    const [lesson] = await deps.store.lessons([request.lessonId]);
    if (lesson === undefined) throw new AppError(ErrorCode.NOT_FOUND, `no lesson ${request.lessonId}`);
    return { lesson };
  };
}

/**
 * ListLessons: newest first, paged, filtered by language, tags and signature.
 *
 * @throws AppError INVALID_ARGUMENT for a page size outside 0..100 or a foreign page token.
 */
export function listLessonsHandler(deps: MemoryDeps) {
  return async (request: ListLessonsRequest): Promise<ListLessonsResponse> => {
    const pageSize = request.pageSize === 0 ? 20 : request.pageSize;
    if (pageSize < 1 || pageSize > 100) throw new AppError(ErrorCode.INVALID_ARGUMENT, `page_size is ${request.pageSize}; use 1 to 100`);
    const offset = request.pageToken === '' ? 0 : Number.parseInt(Buffer.from(request.pageToken, 'base64url').toString('utf8'), 10);
    if (!Number.isInteger(offset) || offset < 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'page_token is not one this service issued; start again without it');
    const page = await deps.store.list({ language: request.language, tags: request.tags, errorSignature: request.errorSignature }, offset, pageSize);
    return { lessons: await deps.store.lessons(page.ids), nextPageToken: page.more ? Buffer.from(String(offset + pageSize)).toString('base64url') : '' };
  };
}
