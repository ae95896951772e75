import { TaskView, type ListTasksRequest, type ListTasksResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { toTaskProto } from '../domain/records';
import type { HandlerContext } from './context';

const defaultPageSize = 20;
const maxPageSize = 100;

/** ListTasks: newest first, optionally by status, a page at a time. */
export function listTasks(context: Pick<HandlerContext, 'store'>) {
  return async (request: ListTasksRequest): Promise<ListTasksResponse> => {
    const pageSize = request.pageSize === 0 ? defaultPageSize : request.pageSize;
    if (pageSize < 0 || pageSize > maxPageSize) throw new AppError(ErrorCode.INVALID_ARGUMENT, `page_size is ${request.pageSize}; use 1 to ${maxPageSize}`);
    const offset = request.pageToken === '' ? 0 : Number.parseInt(Buffer.from(request.pageToken, 'base64url').toString('utf8'), 10);
    if (!Number.isInteger(offset) || offset < 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'page_token is not one this server issued; start again without it');
    const page = await context.store.tasks.list({ statuses: request.statuses, pageSize, offset });
    return {
      tasks: page.tasks.map((task) => toTaskProto(task, request.view === TaskView.TASK_VIEW_FULL)),
      nextPageToken: page.more ? Buffer.from(String(offset + pageSize), 'utf8').toString('base64url') : '',
    };
  };
}
