import { TaskView, type ListTasksRequest, type ListTasksResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { Principal } from '@ratchet/grpc-api';
import { toTaskProto } from '../domain/records';
import { principalOf } from './principal';
import type { HandlerContext } from './context';

const defaultPageSize = 20;
const maxPageSize = 100;

/** ListTasks: the caller's team's tasks, newest first, optionally by status and labels, a page at a time. */
export function listTasks(context: Pick<HandlerContext, 'store'>) {
  return async (request: ListTasksRequest, call: { readonly principal?: Principal } = {}): Promise<ListTasksResponse> => {
    const pageSize = request.pageSize === 0 ? defaultPageSize : request.pageSize;
    if (pageSize < 0 || pageSize > maxPageSize) throw new AppError(ErrorCode.INVALID_ARGUMENT, `page_size is ${request.pageSize}; use 1 to ${maxPageSize}`);
    // Tokens are the base64url of a whole offset; anything else ("1.5", junk, a huge number) was not issued here.
    const decoded = request.pageToken === '' ? '0' : Buffer.from(request.pageToken, 'base64url').toString('utf8');
    const offset = /^\d{1,9}$/.test(decoded) ? Number(decoded) : Number.NaN;
    if (!Number.isSafeInteger(offset)) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'page_token is not one this server issued; start again without it');
    const page = await context.store.tasks.list({ team: principalOf(call).team, statuses: request.statuses, labels: request.labels, pageSize, offset });
    return {
      tasks: page.tasks.map((task) => toTaskProto(task, request.view === TaskView.TASK_VIEW_FULL)),
      nextPageToken: page.more ? Buffer.from(String(offset + pageSize), 'utf8').toString('base64url') : '',
    };
  };
}
