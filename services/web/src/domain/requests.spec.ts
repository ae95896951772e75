import { describe, expect, it } from '@jest/globals';
import { ApprovalDecision, ApprovalKind, Language, LessonStatus, PhaseSwitch, TaskStatus, TaskView } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { answerRequestOf, approveRequestOf, cancelRequestOf, fromSequenceOf, idOf, listLessonsRequestOf, listTasksRequestOf, submitRequestOf } from './requests';

/** The INVALID_ARGUMENT message `work` throws. */
function invalid(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    expect(AppError.is(error) && error.code).toBe(ErrorCode.INVALID_ARGUMENT);
    return (error as Error).message;
  }
  throw new Error('expected INVALID_ARGUMENT');
}

describe('submitRequestOf', () => {
  it('turns the submit form into a SubmitTaskRequest, the server deciding what is left out', () => {
    const request = submitRequestOf({ goal: '  a CLI that manages TODO items  ', language: 'python' });
    expect(request).toMatchObject({
      goal: 'a CLI that manages TODO items',
      language: Language.LANGUAGE_PYTHON,
      budget: { maxIterations: 0, maxTokens: 0, maxCostUsd: 0 },
      approvalPolicy: undefined,
      profile: '',
      project: '',
      reprompt: PhaseSwitch.PHASE_SWITCH_UNSPECIFIED,
      review: PhaseSwitch.PHASE_SWITCH_UNSPECIFIED,
      workspace: [],
      acceptanceTests: [],
    });
  });

  it('takes the profile, the phase switches, a final-result gate, an iteration budget and an idempotency key', () => {
    const request = submitRequestOf({
      goal: 'an API',
      language: 'TypeScript',
      profile: 'web_app',
      project: 'shop',
      maxIterations: 4,
      requireApproval: true,
      reprompt: 'off',
      questions: 'default',
      review: 'on',
      audit: true,
      labels: { ticket: 'T-1' },
      requestId: 'form-1',
    });
    expect(request).toMatchObject({
      language: Language.LANGUAGE_TYPESCRIPT,
      profile: 'web_app',
      project: 'shop',
      budget: { maxIterations: 4 },
      approvalPolicy: { required: [ApprovalKind.APPROVAL_KIND_FINAL_RESULT] },
      reprompt: PhaseSwitch.PHASE_SWITCH_OFF,
      questions: PhaseSwitch.PHASE_SWITCH_UNSPECIFIED,
      review: PhaseSwitch.PHASE_SWITCH_ON,
      audit: PhaseSwitch.PHASE_SWITCH_ON,
      labels: { ticket: 'T-1' },
      requestId: 'form-1',
    });
  });

  it('says which field is wrong and what to send instead', () => {
    expect(invalid(() => submitRequestOf('goal=x'))).toBe('the submit body must be a JSON object');
    expect(invalid(() => submitRequestOf([]))).toBe('the submit body must be a JSON object');
    expect(invalid(() => submitRequestOf({ language: 'python' }))).toBe('goal is missing');
    expect(invalid(() => submitRequestOf({ goal: '   ', language: 'python' }))).toBe('goal is empty');
    expect(invalid(() => submitRequestOf({ goal: 'x' }))).toBe('language is missing; use python, typescript, javascript');
    expect(invalid(() => submitRequestOf({ goal: 'x', language: 'cobol' }))).toBe('language "cobol" is not one Ratchet writes; use python, typescript, javascript');
    expect(invalid(() => submitRequestOf({ goal: 'x', language: 'python', maxIterations: 1000 }))).toBe('maxIterations must be a whole number from 0 to 100, got "1000"');
    expect(invalid(() => submitRequestOf({ goal: 'x', language: 'python', review: 'maybe' }))).toBe('review must be "on", "off" or "default"');
    expect(invalid(() => submitRequestOf({ goal: 'x', language: 'python', requireApproval: 'yes' }))).toBe('requireApproval must be true or false');
    expect(invalid(() => submitRequestOf({ goal: 'x', language: 'python', goall: 'typo' }))).toMatch(/^the submit body has unknown field\(s\) "goall"; it takes goal, language, /);
    expect(invalid(() => submitRequestOf({ goal: 'x'.repeat(20_001), language: 'python' }))).toBe('goal is 20001 characters; the most is 20000');
  });
});

describe('listTasksRequestOf', () => {
  it('filters by statuses named as the CLI names them, pages, and asks for the basic view', () => {
    expect(listTasksRequestOf({ status: 'succeeded,awaiting_approval,TASK_STATUS_FAILED', pageSize: '20', pageToken: 'next' })).toMatchObject({
      statuses: [TaskStatus.TASK_STATUS_SUCCEEDED, TaskStatus.TASK_STATUS_AWAITING_APPROVAL, TaskStatus.TASK_STATUS_FAILED],
      pageSize: 20,
      pageToken: 'next',
      view: TaskView.TASK_VIEW_BASIC,
    });
    expect(listTasksRequestOf({})).toMatchObject({ statuses: [], pageSize: 50, pageToken: '' });
  });

  it('refuses an unknown status and a page size out of range', () => {
    expect(invalid(() => listTasksRequestOf({ status: 'done' }))).toMatch(/^status "done" is unknown; use queued, retrieving, /);
    expect(invalid(() => listTasksRequestOf({ pageSize: '0' }))).toBe('pageSize must be a whole number from 1 to 500, got "0"');
    expect(invalid(() => listTasksRequestOf({ pageSize: 'many' }))).toBe('pageSize must be a whole number from 1 to 500, got "many"');
  });
});

describe('the decisions and the rest', () => {
  it('approves or rejects with a comment; the approver is never taken from the body', () => {
    expect(approveRequestOf('t-1', 'g-1', { decision: 'approve' })).toEqual({ taskId: 't-1', gateId: 'g-1', decision: ApprovalDecision.APPROVAL_DECISION_APPROVED, approver: '', comment: '' });
    expect(approveRequestOf('t-1', 'g-1', { decision: 'Reject', comment: ' use SQLite ' })).toMatchObject({ decision: ApprovalDecision.APPROVAL_DECISION_REJECTED, comment: 'use SQLite' });
    expect(invalid(() => approveRequestOf('t-1', 'g-1', { decision: 'yes' }))).toBe('decision must be "approve" or "reject"');
    expect(invalid(() => approveRequestOf('t-1', 'g-1', { decision: 'approve', approver: 'mallory' }))).toMatch(/unknown field\(s\) "approver"/);
  });

  it('answers questions, an empty answer accepting the stated assumption', () => {
    expect(answerRequestOf('t-1', { answers: [{ questionId: 'q-1', answer: 'SQLite' }, { questionId: 'q-2' }] })).toEqual({
      taskId: 't-1',
      answers: [
        { questionId: 'q-1', answer: 'SQLite' },
        { questionId: 'q-2', answer: '' },
      ],
    });
    expect(invalid(() => answerRequestOf('t-1', { answers: [] }))).toBe('answers must be a list of {questionId, answer}, with at least one');
    expect(invalid(() => answerRequestOf('t-1', { answers: [{ answer: 'x' }] }))).toBe('questionId is missing');
  });

  it('cancels with a reason, or says where it came from', () => {
    expect(cancelRequestOf('t-1', undefined)).toEqual({ taskId: 't-1', reason: 'cancelled from the dashboard' });
    expect(cancelRequestOf('t-1', { reason: 'not needed' })).toEqual({ taskId: 't-1', reason: 'not needed' });
  });

  it('resumes an event stream after the last event the browser saw', () => {
    expect(fromSequenceOf({}, undefined)).toBe(0);
    expect(fromSequenceOf({ from: '5' }, undefined)).toBe(5);
    expect(fromSequenceOf({ from: '5' }, '12')).toBe(13);
    expect(invalid(() => fromSequenceOf({ from: '-1' }, undefined))).toMatch(/^from must be a whole number from 0/);
  });

  it('lists lessons by status, scope and language', () => {
    expect(listLessonsRequestOf({ status: 'promoted', scope: 'shop', language: 'python' })).toMatchObject({ status: LessonStatus.LESSON_STATUS_PROMOTED, scope: 'shop', language: Language.LANGUAGE_PYTHON, pageSize: 100 });
    expect(invalid(() => listLessonsRequestOf({ status: 'great' }))).toBe('lesson status "great" is unknown; use candidate, promoted, demoted, retired');
  });

  it('refuses an empty or oversized id', () => {
    expect(idOf(' abc ', 'task')).toBe('abc');
    expect(invalid(() => idOf('', 'task'))).toBe('the task id "" is not valid');
    expect(invalid(() => idOf('x'.repeat(201), 'lesson'))).toMatch(/^the lesson id "x{40}"…\(161 more characters\) is not valid$/);
  });
});
