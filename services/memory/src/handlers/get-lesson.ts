import { LessonStatus, type ForgetLessonRequest, type ForgetLessonResponse, type GetLessonRequest, type GetLessonResponse, type ListLessonsRequest, type ListLessonsResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { statusName } from '../adapters/lesson-rows';
import { teamScopePrefix } from '@ratchet/agent';
import { scopeOf } from '../domain/scope';
import { presentLessonsWithOutcomes, type MemoryDeps } from './deps';

const lessonIdPattern = /^[A-Za-z0-9-]{1,64}$/;

function checkedId(id: string): string {
  if (!lessonIdPattern.test(id)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `lesson id ${JSON.stringify(id.slice(0, 70))} is malformed; take one from \`ratchet lessons list\``);
  return id;
}

/**
 * GetLesson: one lesson with its evidence, statistics and standing.
 *
 * @throws AppError NOT_FOUND naming the id; INVALID_ARGUMENT for a malformed id.
 */
export function getLessonHandler(deps: MemoryDeps) {
  return async (request: GetLessonRequest): Promise<GetLessonResponse> => {
    const [lesson] = await presentLessonsWithOutcomes(deps, await deps.lessons.lessons([checkedId(request.lessonId)]));
    if (lesson === undefined) throw new AppError(ErrorCode.NOT_FOUND, `no lesson ${request.lessonId}`);
    return { lesson };
  };
}

/**
 * ForgetLesson: deletes the lesson, its evidence and its vector; returns it as it was.
 *
 * @throws AppError NOT_FOUND naming the id; INVALID_ARGUMENT for a malformed id.
 */
export function forgetLessonHandler(deps: MemoryDeps) {
  return async (request: ForgetLessonRequest): Promise<ForgetLessonResponse> => {
    const [lesson] = await presentLessonsWithOutcomes(deps, await deps.lessons.lessons([checkedId(request.lessonId)]));
    if (lesson === undefined || !(await deps.lessons.forget(lesson.id))) throw new AppError(ErrorCode.NOT_FOUND, `no lesson ${request.lessonId}`);
    await deps.vectors.delete([lesson.id]);
    return { lesson };
  };
}

/**
 * ListLessons: newest first, paged, filtered by language, tags, signature,
 * scope and status (RETIRED: those whose weight fell below the threshold).
 *
 * @throws AppError INVALID_ARGUMENT for a page size outside 0..500 or a foreign page token.
 */
export function listLessonsHandler(deps: MemoryDeps) {
  return async (request: ListLessonsRequest): Promise<ListLessonsResponse> => {
    const pageSize = request.pageSize === 0 ? 50 : request.pageSize;
    if (pageSize < 1 || pageSize > 500) throw new AppError(ErrorCode.INVALID_ARGUMENT, `page_size is ${request.pageSize}; use 1 to 500`);
    const token = request.pageToken === '' ? '0' : Buffer.from(request.pageToken, 'base64url').toString('utf8');
    if (!/^\d{1,12}$/.test(token)) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'page_token is not one this service issued; start again without it');
    const offset = Number(token);
    const scope = request.scope.trim() === '' ? '' : scopeOf(request.scope);
    // Retirement follows from the weight at reading time, so RETIRED filters what is stored as any status.
    const retiredOnly = request.status === LessonStatus.LESSON_STATUS_RETIRED;
    const status = request.status === LessonStatus.LESSON_STATUS_UNSPECIFIED || retiredOnly ? '' : statusName(request.status);
    const page = await deps.lessons.list({ language: request.language, tags: request.tags, errorSignature: request.errorSignature, scope, status, teamPrefix: request.team.trim() === '' ? undefined : teamScopePrefix(request.team.trim()) }, offset, pageSize);
    const lessons = await presentLessonsWithOutcomes(deps, await deps.lessons.lessons(page.ids));
    const wanted = request.status === LessonStatus.LESSON_STATUS_UNSPECIFIED ? lessons : lessons.filter((lesson) => lesson.status === request.status);
    return { lessons: wanted, nextPageToken: page.more ? Buffer.from(String(offset + pageSize)).toString('base64url') : '' };
  };
}
