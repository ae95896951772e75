import type { FastifyInstance } from 'fastify';
import { CancelTaskResponse, GetTaskResponse, ListTasksResponse, SubmitTaskResponse, TaskView, type Task } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { cancelRequestOf, idOf, listTasksRequestOf, submitRequestOf } from '../domain/requests';
import { traceLinkOf } from '../domain/trace-link';
import { callOptionsOf, type HandlerContext } from './context';

type TaskParams = { Params: { taskId: string } };

/**
 * A task as the task page reads it: the workspace and acceptance tests by
 * path only (a workspace may hold thousands of files, and the page shows
 * what the iterations wrote).
 */
function withoutInputContents(task: Task): Task {
  return { ...task, workspace: task.workspace.map(({ path }) => ({ path, content: '' })), acceptanceTests: task.acceptanceTests.map(({ path }) => ({ path, content: '' })) };
}

/** The task routes: list, submit, the full view, cancel. */
export function registerTaskRoutes(server: FastifyInstance, context: HandlerContext): void {
  server.get('/api/tasks', async (request, reply) => {
    const options = callOptionsOf(context, request, reply);
    const response = await context.orchestrator.listTasks(listTasksRequestOf(request.query), options);
    return ListTasksResponse.toJSON(response);
  });

  server.post('/api/tasks', async (request, reply) => {
    const options = callOptionsOf(context, request, reply);
    const response = await context.orchestrator.submitTask(submitRequestOf(request.body), options);
    if (response.task === undefined) throw new AppError(ErrorCode.INTERNAL, 'the orchestrator accepted the task but returned none');
    return reply.code(201).send(SubmitTaskResponse.toJSON(response));
  });

  server.get<TaskParams>('/api/tasks/:taskId', async (request, reply) => {
    const options = callOptionsOf(context, request, reply);
    const taskId = idOf(request.params.taskId, 'task');
    const response = await context.orchestrator.getTask({ taskId, view: TaskView.TASK_VIEW_FULL }, options);
    if (response.task === undefined) throw new AppError(ErrorCode.NOT_FOUND, `no task ${taskId}`);
    const traceUrl = traceLinkOf(context.traceUrlTemplate, response.task);
    return { ...(GetTaskResponse.toJSON({ ...response, task: withoutInputContents(response.task) }) as object), links: traceUrl === undefined ? {} : { trace: traceUrl } };
  });

  server.post<TaskParams>('/api/tasks/:taskId/cancel', async (request, reply) => {
    const options = callOptionsOf(context, request, reply);
    // Cancelling waits for the running phase to stop.
    const response = await context.orchestrator.cancelTask(cancelRequestOf(idOf(request.params.taskId, 'task'), request.body), { ...options, timeoutMs: 120_000 });
    return CancelTaskResponse.toJSON(response);
  });
}
