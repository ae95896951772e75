import { TaskView, type GetTaskRequest, type GetTaskResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { toIterationProto, toTaskProto } from '../domain/records';
import type { HandlerContext } from './context';

/** GetTask: a task by id or unique prefix; the full view adds files, iterations and gates. */
export function getTask(context: Pick<HandlerContext, 'store'>) {
  return async (request: GetTaskRequest): Promise<GetTaskResponse> => {
    if (request.taskId.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'task_id is empty');
    const { store } = context;
    const task = await store.tasks.get(request.taskId.trim());
    const full = request.view === TaskView.TASK_VIEW_FULL;
    const iterations = full ? (await store.iterations.list(task.id)).map(toIterationProto) : [];
    return { task: toTaskProto(task, full), iterations, approvals: full ? await store.approvals.list(task.id) : [] };
  };
}
