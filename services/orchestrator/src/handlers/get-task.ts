import { TaskView, type GetTaskRequest, type GetTaskResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { toIterationProto, toTaskProto } from '../domain/records';
import type { HandlerContext } from './context';
import { taskIdOf } from './task-id';

/** GetTask: a task by id or unique prefix; the full view adds files, iterations and gates. */
export function getTask(context: Pick<HandlerContext, 'store'>) {
  return async (request: GetTaskRequest): Promise<GetTaskResponse> => {
    const taskId = taskIdOf(request.taskId);
    if (request.view < 0 || TaskView[request.view] === undefined) {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, `view is ${request.view}; use TASK_VIEW_BASIC, TASK_VIEW_FULL or leave it unset`);
    }
    const { store } = context;
    const task = await store.tasks.get(taskId);
    const full = request.view === TaskView.TASK_VIEW_FULL;
    const iterations = full ? (await store.iterations.list(task.id)).map(toIterationProto) : [];
    return { task: toTaskProto(task, full), iterations, approvals: full ? await store.approvals.list(task.id) : [] };
  };
}
