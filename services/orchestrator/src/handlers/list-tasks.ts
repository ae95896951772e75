import { Task, TaskView, type ListTasksRequest, type ListTasksResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { Principal } from '@ratchet/grpc-api';
import { checkLabels } from '../domain/labels';
import { toTaskProto } from '../domain/records';
import { principalOf } from './principal';
import type { HandlerContext } from './context';

const defaultPageSize = 20;
const maxPageSize = 100;
/**
 * Most bytes of tasks in one page: a page ends early, with a token for the
 * rest, rather than grow toward what a client takes (64 MiB for Ratchet's
 * gRPC clients, 4 MiB for grpc-js' defaults). A task larger than this alone
 * still makes a page of its own.
 */
export const maxListPageBytes = 2 * 1024 * 1024;

/**
 * ListTasks: the caller's team's tasks, newest first, optionally by status
 * and labels, a page at a time: at most `page_size` (1 to 100) tasks and
 * about `maxListPageBytes`, with a token for the next page when there is one.
 */
export function listTasks(context: Pick<HandlerContext, 'store'>) {
  return async (request: ListTasksRequest, call: { readonly principal?: Principal } = {}): Promise<ListTasksResponse> => {
    const pageSize = request.pageSize === 0 ? defaultPageSize : request.pageSize;
    if (pageSize < 0 || pageSize > maxPageSize) throw new AppError(ErrorCode.INVALID_ARGUMENT, `page_size is ${request.pageSize}; use 1 to ${maxPageSize}`);
    // Tokens are the base64url of a whole offset; anything else ("1.5", junk, a huge number) was not issued here.
    const decoded = request.pageToken === '' ? '0' : Buffer.from(request.pageToken, 'base64url').toString('utf8');
    const offset = /^\d{1,9}$/.test(decoded) ? Number(decoded) : Number.NaN;
    if (!Number.isSafeInteger(offset)) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'page_token is not one this server issued; start again without it');
    checkLabels('labels', request.labels);
    const page = await context.store.tasks.list({ team: principalOf(call).team, statuses: request.statuses, labels: request.labels, pageSize, offset });
    const tasks: Task[] = [];
    let bytes = 0;
    for (const record of page.tasks) {
      const task = toTaskProto(record, request.view === TaskView.TASK_VIEW_FULL);
      const size = Task.encode(task).finish().length;
      if (tasks.length > 0 && bytes + size > maxListPageBytes) break;
      tasks.push(task);
      bytes += size;
    }
    const more = page.more || tasks.length < page.tasks.length;
    return { tasks, nextPageToken: more ? Buffer.from(String(offset + tasks.length), 'utf8').toString('base64url') : '' };
  };
}
