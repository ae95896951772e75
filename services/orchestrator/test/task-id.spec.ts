import { describe, expect, it } from '@jest/globals';
import { CancelTaskRequest, GetTaskRequest, ResumeTaskRequest } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { cancelTask } from '../src/handlers/cancel-task';
import type { HandlerContext } from '../src/handlers/context';
import { getTask } from '../src/handlers/get-task';
import { resumeTask } from '../src/handlers/resume-task';
import { gateIdOf, maxIdChars, taskIdOf } from '../src/handlers/task-id';

const megabyte = 'f'.repeat(1_000_000);

describe('taskIdOf', () => {
  it('takes a whole id or a prefix, trimmed', () => {
    expect(taskIdOf(' 0b9c2d4e-1f2a-4b3c-8d4e-5f6a7b8c9d0e ')).toBe('0b9c2d4e-1f2a-4b3c-8d4e-5f6a7b8c9d0e');
    expect(taskIdOf('0b9c2d')).toBe('0b9c2d');
    expect(taskIdOf('x'.repeat(maxIdChars))).toHaveLength(64);
  });

  it('refuses an empty, overlong or control-character id without echoing it', () => {
    expect(() => taskIdOf('  ')).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringMatching(/^task_id is empty; /) }));
    expect(() => taskIdOf(megabyte)).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: 'task_id is 1000000 characters; task ids are at most 64' }));
    expect(() => taskIdOf('abc\ndef')).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringMatching(/^task_id contains control characters/) }));
    expect(() => gateIdOf(megabyte)).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: 'gate_id is 1000000 characters; gate ids are at most 64' }));
  });
});

describe('handlers given a 1 MB task id', () => {
  // The id is refused before the store is asked (which would quote it in NOT_FOUND).
  const context = {
    store: {
      tasks: {
        get: () => {
          throw new Error('the store must not be asked');
        },
      },
    },
  } as unknown as HandlerContext;
  const expected = { code: ErrorCode.INVALID_ARGUMENT, message: 'task_id is 1000000 characters; task ids are at most 64' };

  it('GetTask, CancelTask and ResumeTask answer INVALID_ARGUMENT with a short message', async () => {
    await expect(getTask(context)(GetTaskRequest.fromPartial({ taskId: megabyte }))).rejects.toMatchObject(expected);
    await expect(cancelTask(context)(CancelTaskRequest.fromPartial({ taskId: megabyte }), { deadline: Infinity })).rejects.toMatchObject(expected);
    await expect(resumeTask(context)(ResumeTaskRequest.fromPartial({ taskId: megabyte }))).rejects.toMatchObject(expected);
  });

  it('GetTask refuses a view it does not know; ResumeTask bounds what it adds to the budget', async () => {
    await expect(getTask(context)(GetTaskRequest.fromPartial({ taskId: 'task-1', view: -1 }))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('view is -1') });
    await expect(resumeTask(context)(ResumeTaskRequest.fromPartial({ taskId: 'task-1', additionalBudget: { maxWallTime: { seconds: 1, nanos: -1 } } }))).rejects.toMatchObject({
      code: ErrorCode.INVALID_ARGUMENT,
      message: 'additional_budget.max_wall_time.nanos is -1; use 0 to 999999999',
    });
    await expect(resumeTask(context)(ResumeTaskRequest.fromPartial({ taskId: 'task-1', additionalBudget: { maxTokens: Number.MAX_SAFE_INTEGER } }))).rejects.toMatchObject({
      code: ErrorCode.INVALID_ARGUMENT,
      message: 'additional_budget.max_tokens is 9007199254740991; use 0 to 1000000000',
    });
  });
});
