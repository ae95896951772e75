import {
  AnswerRequest,
  ApprovalDecision,
  ApprovalKind,
  ApproveRequest,
  CancelTaskRequest,
  Language,
  languageFromJSON,
  LessonStatus,
  lessonStatusFromJSON,
  ListLessonsRequest,
  ListTasksRequest,
  PhaseSwitch,
  SubmitTaskRequest,
  TaskStatus,
  taskStatusFromJSON,
  TaskView,
} from '@ratchet/contracts';
import { AppError, ErrorCode, quoted } from '@ratchet/errors';

// The gateway's input mapping: JSON bodies and query strings from the
// browser, checked and turned into the orchestrator's requests. Everything
// here is pure; a bad value is an INVALID_ARGUMENT that names the field and
// what to send instead.

/** Longest goal, comment or answer accepted, in characters (the orchestrator has its own limits too). */
export const MAX_TEXT_CHARS = 20_000;

const invalid = (message: string) => new AppError(ErrorCode.INVALID_ARGUMENT, message);

type Fields = Readonly<Record<string, unknown>>;

/** `body` as an object with only `allowed` keys, so a misspelt field is an error rather than ignored. */
function objectOf(body: unknown, what: string, allowed: readonly string[]): Fields {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) throw invalid(`the ${what} body must be a JSON object`);
  const unknown = Object.keys(body).filter((key) => !allowed.includes(key));
  if (unknown.length > 0) throw invalid(`the ${what} body has unknown field(s) ${unknown.map((key) => quoted(key, 40)).join(', ')}; it takes ${allowed.join(', ')}`);
  return body as Fields;
}

function text(fields: Fields, key: string, options: { required?: boolean; max?: number } = {}): string {
  const value = fields[key];
  if (value === undefined || value === null) {
    if (options.required) throw invalid(`${key} is missing`);
    return '';
  }
  if (typeof value !== 'string') throw invalid(`${key} must be a string`);
  const max = options.max ?? MAX_TEXT_CHARS;
  if (value.length > max) throw invalid(`${key} is ${value.length} characters; the most is ${max}`);
  if (options.required && value.trim() === '') throw invalid(`${key} is empty`);
  return value;
}

function flag(fields: Fields, key: string): boolean {
  const value = fields[key];
  if (value === undefined || value === null) return false;
  if (typeof value !== 'boolean') throw invalid(`${key} must be true or false`);
  return value;
}

/** A whole number in [min, max] from a JSON number or a query string; `fallback` when absent or empty. */
function wholeNumber(value: unknown, key: string, min: number, max: number, fallback: number): number {
  if (value === undefined || value === null || value === '') return fallback;
  const number = typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
  if (typeof number !== 'number' || !Number.isSafeInteger(number) || number < min || number > max) throw invalid(`${key} must be a whole number from ${min} to ${max}, got ${quoted(String(value), 40)}`);
  return number;
}

/** One query parameter as a string: the last value when repeated. */
function queryValue(query: unknown, key: string): string {
  const value = query !== null && typeof query === 'object' ? (query as Record<string, unknown>)[key] : undefined;
  if (Array.isArray(value)) return String(value.at(-1) ?? '');
  return typeof value === 'string' ? value : '';
}

/** The languages a task may be written in, as the submit form names them. */
export const languageNames = ['python', 'typescript', 'javascript'] as const;

/** `python` (or `LANGUAGE_PYTHON`) as the contract's enum. */
export function parseLanguage(name: string): Language {
  const upper = name.trim().toUpperCase();
  const language = languageFromJSON(upper.startsWith('LANGUAGE_') ? upper : `LANGUAGE_${upper}`);
  if (language === Language.UNRECOGNIZED || language === Language.LANGUAGE_UNSPECIFIED) throw invalid(`language ${quoted(name, 40)} is not one Ratchet writes; use ${languageNames.join(', ')}`);
  return language;
}

const phaseSwitches: Readonly<Record<string, PhaseSwitch>> = { default: PhaseSwitch.PHASE_SWITCH_UNSPECIFIED, on: PhaseSwitch.PHASE_SWITCH_ON, off: PhaseSwitch.PHASE_SWITCH_OFF };

/** `on`, `off` or `default` (the server's configured default; also when absent). */
function phaseSwitch(fields: Fields, key: string): PhaseSwitch {
  const value = fields[key];
  if (value === undefined || value === null) return PhaseSwitch.PHASE_SWITCH_UNSPECIFIED;
  if (typeof value === 'boolean') return value ? PhaseSwitch.PHASE_SWITCH_ON : PhaseSwitch.PHASE_SWITCH_OFF;
  const chosen = typeof value === 'string' ? phaseSwitches[value.trim().toLowerCase()] : undefined;
  if (chosen === undefined) throw invalid(`${key} must be "on", "off" or "default"`);
  return chosen;
}

function labelsOf(fields: Fields): Record<string, string> {
  const value = fields['labels'];
  if (value === undefined || value === null) return {};
  if (typeof value !== 'object' || Array.isArray(value)) throw invalid('labels must be an object of strings');
  const labels: Record<string, string> = {};
  for (const [key, label] of Object.entries(value)) {
    if (typeof label !== 'string') throw invalid(`label ${quoted(key, 40)} must be a string`);
    labels[key] = label;
  }
  return labels;
}

const submitFields = ['goal', 'language', 'profile', 'project', 'maxIterations', 'requireApproval', 'reprompt', 'questions', 'review', 'audit', 'labels', 'requestId'] as const;

/**
 * POST /api/tasks: a new task from the submit form. `goal` and `language`
 * are required; `reprompt`, `questions`, `review` and `audit` are `on`,
 * `off` or `default`; `requireApproval` makes a person approve the passing
 * result (a FINAL_RESULT gate); `requestId` makes a resubmission (a double
 * click) return the same task.
 *
 * @throws AppError INVALID_ARGUMENT naming the bad or unknown field.
 */
export function submitRequestOf(body: unknown): SubmitTaskRequest {
  const fields = objectOf(body, 'submit', submitFields);
  const goal = text(fields, 'goal', { required: true }).trim();
  const languageField = fields['language'];
  if (typeof languageField !== 'string') throw invalid(`language is missing; use ${languageNames.join(', ')}`);
  return SubmitTaskRequest.fromPartial({
    goal,
    language: parseLanguage(languageField),
    budget: { maxIterations: wholeNumber(fields['maxIterations'], 'maxIterations', 0, 100, 0), maxTokens: 0, maxCostUsd: 0 },
    approvalPolicy: flag(fields, 'requireApproval') ? { required: [ApprovalKind.APPROVAL_KIND_FINAL_RESULT] } : undefined,
    labels: labelsOf(fields),
    requestId: text(fields, 'requestId', { max: 200 }),
    project: text(fields, 'project', { max: 200 }).trim(),
    profile: text(fields, 'profile', { max: 200 }).trim(),
    reprompt: phaseSwitch(fields, 'reprompt'),
    questions: phaseSwitch(fields, 'questions'),
    review: phaseSwitch(fields, 'review'),
    audit: phaseSwitch(fields, 'audit'),
  });
}

/** `succeeded`, `TASK_STATUS_SUCCEEDED` or `awaiting_approval` as the contract's enum. */
export function parseTaskStatus(name: string): TaskStatus {
  const upper = name.trim().toUpperCase().replace(/[\s-]+/g, '_');
  const status = taskStatusFromJSON(upper.startsWith('TASK_STATUS_') ? upper : `TASK_STATUS_${upper}`);
  if (status === TaskStatus.UNRECOGNIZED || status === TaskStatus.TASK_STATUS_UNSPECIFIED) {
    const names = Object.keys(TaskStatus).filter((key) => key.startsWith('TASK_STATUS_') && key !== 'TASK_STATUS_UNSPECIFIED');
    throw invalid(`status ${quoted(name, 40)} is unknown; use ${names.map((key) => key.replace('TASK_STATUS_', '').toLowerCase()).join(', ')}`);
  }
  return status;
}

/**
 * GET /api/tasks?status=succeeded,failed&pageSize=50&pageToken=...: one
 * page of tasks, newest first, in the basic view.
 *
 * @throws AppError INVALID_ARGUMENT for an unknown status or a page size outside 1-500.
 */
export function listTasksRequestOf(query: unknown): ListTasksRequest {
  const statuses = queryValue(query, 'status')
    .split(',')
    .filter((name) => name.trim() !== '')
    .map(parseTaskStatus);
  return ListTasksRequest.fromPartial({ statuses, pageSize: wholeNumber(queryValue(query, 'pageSize'), 'pageSize', 1, 500, 50), pageToken: queryValue(query, 'pageToken'), view: TaskView.TASK_VIEW_BASIC });
}

/** POST /api/tasks/:taskId/cancel with an optional `reason`. */
export function cancelRequestOf(taskId: string, body: unknown): CancelTaskRequest {
  const fields = objectOf(body ?? {}, 'cancel', ['reason']);
  return { taskId, reason: text(fields, 'reason').trim() || 'cancelled from the dashboard' };
}

const decisions: Readonly<Record<string, ApprovalDecision>> = {
  approve: ApprovalDecision.APPROVAL_DECISION_APPROVED,
  approved: ApprovalDecision.APPROVAL_DECISION_APPROVED,
  reject: ApprovalDecision.APPROVAL_DECISION_REJECTED,
  rejected: ApprovalDecision.APPROVAL_DECISION_REJECTED,
};

/**
 * POST /api/tasks/:taskId/approvals/:gateId with `decision` (`approve` or
 * `reject`) and an optional `comment` (on a rejection, fed back to the loop).
 * The approver recorded is whoever the token names, not a field.
 *
 * @throws AppError INVALID_ARGUMENT for a missing or unknown decision.
 */
export function approveRequestOf(taskId: string, gateId: string, body: unknown): ApproveRequest {
  const fields = objectOf(body, 'approval', ['decision', 'comment']);
  const decisionText = fields['decision'];
  const decision = typeof decisionText === 'string' ? decisions[decisionText.trim().toLowerCase()] : undefined;
  if (decision === undefined) throw invalid('decision must be "approve" or "reject"');
  return { taskId, gateId, decision, approver: '', comment: text(fields, 'comment').trim() };
}

/**
 * POST /api/tasks/:taskId/answers with `answers`: `[{questionId, answer}]`;
 * an empty answer accepts the question's stated assumption.
 *
 * @throws AppError INVALID_ARGUMENT for no answers, or one without a question id.
 */
export function answerRequestOf(taskId: string, body: unknown): AnswerRequest {
  const fields = objectOf(body, 'answers', ['answers']);
  const answers = fields['answers'];
  if (!Array.isArray(answers) || answers.length === 0) throw invalid('answers must be a list of {questionId, answer}, with at least one');
  return {
    taskId,
    answers: answers.map((item: unknown, index) => {
      const answer = objectOf(item, `answers[${index}]`, ['questionId', 'answer']);
      return { questionId: text(answer, 'questionId', { required: true, max: 200 }), answer: text(answer, 'answer') };
    }),
  };
}

/** The sequence a (re)connected event stream starts at: after `Last-Event-ID` when the browser resumes, else `from` (0 = the whole history). */
export function fromSequenceOf(query: unknown, lastEventId: string | undefined): number {
  if (lastEventId !== undefined && lastEventId.trim() !== '') return wholeNumber(lastEventId, 'Last-Event-ID', 0, Number.MAX_SAFE_INTEGER - 1, 0) + 1;
  return wholeNumber(queryValue(query, 'from'), 'from', 0, Number.MAX_SAFE_INTEGER, 0);
}

const lessonStatusNames = ['candidate', 'promoted', 'demoted', 'retired'] as const;

/**
 * GET /api/lessons?status=promoted&scope=...&language=python&pageSize=...:
 * one page of lessons (the orchestrator limits them to the caller's team).
 *
 * @throws AppError INVALID_ARGUMENT for an unknown status or language.
 */
export function listLessonsRequestOf(query: unknown): ListLessonsRequest {
  const statusText = queryValue(query, 'status').trim();
  let status = LessonStatus.LESSON_STATUS_UNSPECIFIED;
  if (statusText !== '') {
    status = lessonStatusFromJSON(`LESSON_STATUS_${statusText.toUpperCase()}`);
    if (status === LessonStatus.UNRECOGNIZED || status === LessonStatus.LESSON_STATUS_UNSPECIFIED) throw invalid(`lesson status ${quoted(statusText, 40)} is unknown; use ${lessonStatusNames.join(', ')}`);
  }
  const languageText = queryValue(query, 'language').trim();
  return ListLessonsRequest.fromPartial({
    pageSize: wholeNumber(queryValue(query, 'pageSize'), 'pageSize', 1, 500, 100),
    pageToken: queryValue(query, 'pageToken'),
    scope: queryValue(query, 'scope').trim(),
    status,
    language: languageText === '' ? Language.LANGUAGE_UNSPECIFIED : parseLanguage(languageText),
  });
}

/**
 * A task or lesson id from the path: what the orchestrator looks up (an
 * id, or a task id's unique prefix of 8+ characters).
 *
 * @throws AppError INVALID_ARGUMENT for an empty or oversized id.
 */
export function idOf(value: unknown, what: string): string {
  const id = typeof value === 'string' ? value.trim() : '';
  if (id === '' || id.length > 200) throw invalid(`the ${what} id ${quoted(String(value ?? ''), 40)} is not valid`);
  return id;
}
