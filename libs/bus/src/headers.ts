/** Header names used on the bus. Lower-case on the wire. */
export const Header = {
  REQUEST_ID: 'ratchet-request-id',
  /** Absolute deadline, epoch milliseconds. */
  DEADLINE: 'ratchet-deadline',
  ERROR_CODE: 'ratchet-error-code',
  ERROR_MESSAGE: 'ratchet-error-message',
  ERROR_RETRYABLE: 'ratchet-error-retryable',
  JOB_ID: 'ratchet-job-id',
  DEAD_LETTER_REASON: 'ratchet-dead-letter-reason',
  TRACEPARENT: 'traceparent',
  TRACESTATE: 'tracestate',
} as const;

const subjectToken = /^[A-Za-z0-9_-]{1,128}$/;

/** True when `value` can be one token of a NATS subject (no dots, wildcards or spaces). */
export function isSubjectToken(value: string): boolean {
  return subjectToken.test(value);
}

/** `ratchet.v1.<Service>.<Method>` from a service's full proto name (`ratchet.v1.PlannerService`). */
export function rpcSubject(serviceFullName: string, method: string): string {
  return `${serviceFullName}.${method}`;
}

export const Subjects = {
  queue: (queue: string) => `ratchet.v1.queue.${queue}`,
  deadLetter: (queue: string) => `ratchet.v1.deadletter.${queue}`,
  events: (taskId: string) => `ratchet.v1.events.${taskId}`,
  /** Where a queued call's result goes: one caller, one ticket per call (`*` to listen to all of a caller's). */
  result: (callerId: string, ticket: string) => `ratchet.v1.results.${callerId}.${ticket}`,
} as const;
