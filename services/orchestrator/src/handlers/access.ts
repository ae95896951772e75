import { memoryScopeOf, scopeForTeam, teamOwns, teamReads, teamScopePrefix } from '@ratchet/agent';
import type { Lesson } from '@ratchet/contracts';
import { AppError, ErrorCode, quoted } from '@ratchet/errors';
import { requireRole, Role, type Principal } from '@ratchet/grpc-api';
import type { OrchestratorService } from '../orchestrator-api';
import type { HandlerContext } from './context';
import { principalOf, type ClientCallContext } from './principal';
import { taskIdOf } from './task-id';

type Implementation = OrchestratorService['implementation'];
type WatchTask = OrchestratorService['watchTask'];

/**
 * The client API as principals may use it: every method checks the
 * caller's role, and a task id is looked up within the caller's team only,
 * so another team's task is NOT_FOUND (its existence is not revealed) and an
 * id prefix never matches across teams. Lessons are read and changed within
 * the team's memory scopes.
 */
export function withAccessControl(context: Pick<HandlerContext, 'store'>, inner: Implementation, watch: WatchTask): { implementation: Implementation; watchTask: WatchTask } {
  /** The full id of a task of the caller's team that `taskId` names (an id or a unique prefix). */
  const ownTask = async (principal: Principal, taskId: string): Promise<string> => (await context.store.tasks.get(taskIdOf(taskId), { team: principal.team })).id;
  const allowed = (call: { readonly principal?: Principal }, role: Role, action: string) => {
    const principal = principalOf(call);
    requireRole(principal, role, action);
    return principal;
  };
  const visible = (principal: Principal, lesson: Lesson | undefined): Lesson | undefined => (lesson === undefined ? undefined : { ...lesson, scope: scopeForTeam(principal.team, lesson.scope) });
  const readableLesson = async (principal: Principal, lessonId: string, call: ClientCallContext, change: boolean) => {
    const { lesson } = await inner.getLesson({ lessonId }, call);
    const scope = lesson?.scope ?? '';
    if (lesson === undefined || !teamReads(principal.team, scope)) throw new AppError(ErrorCode.NOT_FOUND, `no lesson ${quoted(lessonId)}; \`ratchet lessons list\` lists them`);
    if (change && !teamOwns(principal.team, scope)) throw new AppError(ErrorCode.PERMISSION_DENIED, `lesson ${lesson.id} is in the ${scope} scope, which team ${principal.team} reads but does not own`);
    return lesson;
  };

  const implementation: Implementation = {
    submitTask: async (request, call) => {
      allowed(call, Role.SUBMITTER, 'submit tasks');
      if (request.project.trim().startsWith('team:')) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'project may not start with "team:": that prefix names teams\' memory scopes');
      return inner.submitTask(request, call);
    },
    getTask: async (request, call) => inner.getTask({ ...request, taskId: await ownTask(allowed(call, Role.VIEWER, 'read tasks'), request.taskId) }, call),
    listTasks: async (request, call) => {
      allowed(call, Role.VIEWER, 'read tasks');
      return inner.listTasks(request, call);
    },
    cancelTask: async (request, call) => inner.cancelTask({ ...request, taskId: await ownTask(allowed(call, Role.SUBMITTER, 'cancel tasks'), request.taskId) }, call),
    resumeTask: async (request, call) => inner.resumeTask({ ...request, taskId: await ownTask(allowed(call, Role.SUBMITTER, 'resume tasks'), request.taskId) }, call),
    approve: async (request, call) => inner.approve({ ...request, taskId: await ownTask(allowed(call, Role.APPROVER, 'decide approval gates'), request.taskId) }, call),
    // Clarifying questions are about what to build: whoever may submit the team's tasks may answer them.
    answer: async (request, call) => inner.answer({ ...request, taskId: await ownTask(allowed(call, Role.SUBMITTER, 'answer questions'), request.taskId) }, call),
    listProfiles: async (request, call) => {
      allowed(call, Role.VIEWER, 'list profiles');
      return inner.listProfiles(request, call);
    },
    listLessons: async (request, call) => {
      const principal = allowed(call, Role.VIEWER, 'read lessons');
      const scope = request.scope.trim();
      const response = await inner.listLessons({ ...request, scope: scope === '' ? '' : memoryScopeOf(principal.team, scope), team: principal.team }, call);
      return { ...response, lessons: response.lessons.map((lesson) => visible(principal, lesson) as Lesson) };
    },
    getLesson: async (request, call) => {
      const principal = allowed(call, Role.VIEWER, 'read lessons');
      return { lesson: visible(principal, await readableLesson(principal, request.lessonId, call, false)) };
    },
    forgetLesson: async (request, call) => {
      const principal = allowed(call, Role.SUBMITTER, 'forget lessons');
      await readableLesson(principal, request.lessonId, call, true);
      const response = await inner.forgetLesson(request, call);
      return { lesson: visible(principal, response.lesson) };
    },
    importLessons: async (request, call) => {
      const principal = allowed(call, Role.SUBMITTER, 'import lessons');
      const scope = request.scope.trim();
      const foreign = [scope, ...request.lessons.map((lesson) => lesson.scope)].find((name) => name.trim().startsWith('team:'));
      if (foreign !== undefined && teamScopePrefix(principal.team) === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, `scope ${quoted(foreign)} belongs to a team; import it with a token of that team`);
      // A team's lessons land in its own scopes, whatever the export says.
      return inner.importLessons(
        { ...request, scope: scope === '' ? '' : memoryScopeOf(principal.team, scope), lessons: request.lessons.map((lesson) => ({ ...lesson, scope: memoryScopeOf(principal.team, lesson.scope === 'global' ? '' : lesson.scope) })) },
        call,
      );
    },
    reindexLessons: async (request, call) => {
      allowed(call, Role.ADMIN, 're-index every team\'s lessons');
      return inner.reindexLessons(request, call);
    },
  };
  const watchTask: WatchTask = async function* (request, call) {
    const taskId = await ownTask(allowed(call, Role.VIEWER, 'read tasks'), request.taskId);
    yield* watch({ ...request, taskId }, call);
  };
  return { implementation, watchTask };
}
