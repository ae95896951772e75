import type { ServiceClient } from '@ratchet/bus';
import type {
  ForgetLessonRequest,
  ForgetLessonResponse,
  GetLessonRequest,
  GetLessonResponse,
  ImportLessonsRequest,
  ImportLessonsResponse,
  ListLessonsRequest,
  ListLessonsResponse,
  MemoryServiceDefinition,
  ReindexLessonsRequest,
  ReindexLessonsResponse,
} from '@ratchet/contracts';

import type { ClientCallContext as CallContext } from './principal';

type Memory = ServiceClient<typeof MemoryServiceDefinition>;

/** The lesson RPCs of the client API, as the orchestrator serves them. */
export interface LessonHandlers {
  listLessons(request: ListLessonsRequest, context: CallContext): Promise<ListLessonsResponse>;
  getLesson(request: GetLessonRequest, context: CallContext): Promise<GetLessonResponse>;
  forgetLesson(request: ForgetLessonRequest, context: CallContext): Promise<ForgetLessonResponse>;
  importLessons(request: ImportLessonsRequest, context: CallContext): Promise<ImportLessonsResponse>;
  reindexLessons(request: ReindexLessonsRequest, context: CallContext): Promise<ReindexLessonsResponse>;
}

/**
 * Lessons for clients: the orchestrator is their one API, so it passes these
 * calls to the memory service with the caller's deadline and cancellation;
 * memory's errors (NOT_FOUND, INVALID_ARGUMENT, ...) reach the client as they are.
 */
export function lessonHandlers(memory: Memory): LessonHandlers {
  const options = (context: CallContext) => ({ timeoutMs: Math.max(1, context.deadline - Date.now()), signal: context.signal });
  return {
    listLessons: (request, context) => memory.listLessons(request, options(context)),
    getLesson: (request, context) => memory.getLesson(request, options(context)),
    forgetLesson: (request, context) => memory.forgetLesson(request, options(context)),
    importLessons: (request, context) => memory.importLessons(request, options(context)),
    reindexLessons: (request, context) => memory.reindexLessons(request, options(context)),
  };
}
