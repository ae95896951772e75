import { statusName } from '@ratchet/agent';
import { StopReason, TaskStatus, type AnswerRequest, type AnswerResponse } from '@ratchet/contracts';
import { AppError, ErrorCode, quoted } from '@ratchet/errors';
import type { Principal } from '@ratchet/grpc-api';
import { linkActiveSpan } from '@ratchet/telemetry';
import { InputKind, type TaskInput } from '../domain/inputs';
import { assumptionAnswerer, UnansweredQuestions } from '../domain/policy';
import { isOpenQuestion, toTaskProto } from '../domain/records';
import { commitInput, type HandlerContext } from './context';
import { principalOf } from './principal';
import { taskIdOf } from './task-id';

/** Longest answer accepted, in characters. */
export const maxAnswerChars = 10_000;

/**
 * Answer: answers to the reprompter's open questions. The task waits for
 * the rest while some stay open, and goes back to REPROMPTING once none
 * is; an empty answer takes the question's stated assumption.
 *
 * @throws AppError FAILED_PRECONDITION when the task is not waiting for
 *   answers; INVALID_ARGUMENT for no answers, an unknown or already
 *   answered question, or an answer that is too long.
 */
export function answer(context: HandlerContext) {
  return async (request: AnswerRequest, call: { readonly principal?: Principal } = {}): Promise<AnswerResponse> => {
    const taskId = taskIdOf(request.taskId);
    if (request.answers.length === 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'no answers given; answer each open question by its id (an empty answer takes its stated assumption)');
    const task = await context.store.tasks.get(taskId);
    linkActiveSpan(task.traceContext);
    if (task.status !== TaskStatus.TASK_STATUS_AWAITING_ANSWER) throw new AppError(ErrorCode.FAILED_PRECONDITION, `task ${task.id} is ${statusName(task.status)}, not waiting for answers`);
    const open = new Set(task.questions.filter(isOpenQuestion).map((question) => question.questionId));
    const seen = new Set<string>();
    for (const given of request.answers) {
      if (!open.has(given.questionId)) {
        const known = task.questions.some((question) => question.questionId === given.questionId);
        throw new AppError(
          ErrorCode.INVALID_ARGUMENT,
          known ? `question ${quoted(given.questionId)} of task ${task.id} was already answered` : `task ${task.id} has no question ${quoted(given.questionId, 40)}; open ones: ${[...open].join(', ')}`,
        );
      }
      if (seen.has(given.questionId)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `question ${given.questionId} is answered twice in one request; give one answer each`);
      seen.add(given.questionId);
      if (given.answer.length > maxAnswerChars) throw new AppError(ErrorCode.INVALID_ARGUMENT, `the answer to ${given.questionId} is ${given.answer.length} characters; keep it under ${maxAnswerChars}`);
      if (given.answer.includes('\0')) throw new AppError(ErrorCode.INVALID_ARGUMENT, `the answer to ${given.questionId} contains a NUL character (\\u0000); send plain text`);
    }
    const input: TaskInput = { kind: InputKind.ANSWERED, at: context.now(), answers: request.answers.map(({ questionId, answer: text }) => ({ questionId, answer: text })), answeredBy: principalOf(call).name };
    const { state } = await commitInput(context, task, input, 'its questions were being answered');
    return { task: toTaskProto(state.task, false) };
  };
}

/**
 * Ends the wait of a task whose questions nobody answered in time: their
 * stated assumptions are taken (`questions.onTimeout: assume`), or the task
 * fails (`fail`). An answer that got there first wins.
 */
export function expireQuestions(context: HandlerContext) {
  return async (taskId: string): Promise<void> => {
    const task = await context.store.tasks.get(taskId);
    if (task.status !== TaskStatus.TASK_STATUS_AWAITING_ANSWER) return;
    const open = task.questions.filter(isOpenQuestion);
    const at = context.now();
    const input: TaskInput =
      context.policy.questions.onTimeout === UnansweredQuestions.FAIL
        ? { kind: InputKind.STOPPED, at, reason: StopReason.STOP_REASON_QUESTION_UNANSWERED, detail: `nobody answered ${open.length} question(s) in time: ${open.map((question) => question.question).join(' / ')}` }
        : { kind: InputKind.ANSWERED, at, answers: open.map((question) => ({ questionId: question.questionId, answer: '' })), answeredBy: assumptionAnswerer };
    await commitInput(context, task, input, 'its questions were timing out').catch((error: unknown) => {
      if (AppError.from(error).code !== ErrorCode.FAILED_PRECONDITION) throw error;
    });
  };
}
