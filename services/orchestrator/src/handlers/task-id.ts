import { AppError, ErrorCode } from '@ratchet/errors';

/**
 * Longest task or gate id accepted, in characters. The server makes both
 * (UUIDs, 36 characters: submit-task.ts, runner/phases.ts); the rest is
 * room for another format, not for client text.
 */
export const maxIdChars = 64;

/**
 * The task id of a request's `task_id`, trimmed: a whole id or a unique
 * prefix of one (as users type them from `ratchet history`).
 *
 * @throws AppError INVALID_ARGUMENT when it is empty, longer than
 *   `maxIdChars` or holds control characters; the message never quotes it.
 */
export function taskIdOf(raw: string): string {
  return idOf('task_id', 'task ids', raw, 'give the id SubmitTask returned (`ratchet history` lists them)');
}

/**
 * The gate id of a request's `gate_id`, trimmed.
 *
 * @throws AppError INVALID_ARGUMENT as `taskIdOf`.
 */
export function gateIdOf(raw: string): string {
  return idOf('gate_id', 'gate ids', raw, 'it is in the ApprovalRequested event and in the task (pending_gate_id)');
}

function idOf(field: string, what: string, raw: string, where: string): string {
  const id = raw.trim();
  if (id === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field} is empty; ${where}`);
  if (id.length > maxIdChars) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field} is ${id.length} characters; ${what} are at most ${maxIdChars}`);
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(id)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${field} contains control characters; ${what} are letters, digits and -`);
  return id;
}
