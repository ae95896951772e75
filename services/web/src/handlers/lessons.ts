import type { FastifyInstance } from 'fastify';
import { GetLessonResponse, ListLessonsResponse, ListProfilesResponse } from '@ratchet/contracts';
import { idOf, listLessonsRequestOf } from '../domain/requests';
import { callOptionsOf, type HandlerContext } from './context';

/** What the dashboard reads besides tasks: lessons, and the profiles a task may be submitted with. */
export function registerLessonRoutes(server: FastifyInstance, context: HandlerContext): void {
  server.get('/api/lessons', async (request, reply) => {
    const options = callOptionsOf(context, request, reply);
    return ListLessonsResponse.toJSON(await context.orchestrator.listLessons(listLessonsRequestOf(request.query), options));
  });

  server.get<{ Params: { lessonId: string } }>('/api/lessons/:lessonId', async (request, reply) => {
    const options = callOptionsOf(context, request, reply);
    return GetLessonResponse.toJSON(await context.orchestrator.getLesson({ lessonId: idOf(request.params.lessonId, 'lesson') }, options));
  });

  server.get('/api/profiles', async (request, reply) => {
    const options = callOptionsOf(context, request, reply);
    return ListProfilesResponse.toJSON(await context.orchestrator.listProfiles({}, options));
  });
}
