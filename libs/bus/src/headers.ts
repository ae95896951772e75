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
  /**
   * On a queued call's result: HMAC-SHA256 of the result under the key the
   * caller put in the job (`ratchet-result-key`), so only a worker that was
   * given the job can answer it.
   */
  RESULT_SIGNATURE: 'ratchet-result-signature',
  /**
   * Set by the NATS transport on a message whose payload was too large for
   * one message: the name of the JetStream object holding it; the body is
   * empty. The receiving transport reads the object and removes the header.
   */
  PAYLOAD_OBJECT: 'ratchet-payload-object',
  TRACEPARENT: 'traceparent',
  TRACESTATE: 'tracestate',
} as const;

const subjectToken = /^[A-Za-z0-9_-]{1,128}$/;

/** True when `value` can be one token of a NATS subject (no dots, wildcards or spaces). */
export function isSubjectToken(value: string): boolean {
  return subjectToken.test(value);
}

/**
 * `ratchet.v1.<Service>.<Method>` from a service's full proto name
 * (`ratchet.v1.PlannerService`); with `instance`, the subject of that one
 * replica, `ratchet.v1.<Service>.<instance>.<Method>`, for calls that must
 * reach the process holding some state (a sandbox session).
 */
export function rpcSubject(serviceFullName: string, method: string, instance?: string): string {
  return instance === undefined ? `${serviceFullName}.${method}` : `${serviceFullName}.${instance}.${method}`;
}

/**
 * A replica's name made into one subject token: characters a token cannot
 * hold (dots of a host name, say) become `-`, and it is cut at 128.
 */
export function instanceToken(name: string): string {
  const token = name.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 128);
  return token === '' ? '-' : token;
}

export const Subjects = {
  queue: (queue: string) => `ratchet.v1.queue.${queue}`,
  deadLetter: (queue: string) => `ratchet.v1.deadletter.${queue}`,
  events: (taskId: string) => `ratchet.v1.events.${taskId}`,
  /**
   * Where the coder reports each tool step of a coding phase and waits until
   * the orchestrator stored it: one subject per task and phase (`*` for all).
   */
  progress: (taskId: string, phase: string) => `ratchet.v1.progress.${taskId}.${phase}`,
  /** Where a queued call's result goes: one queue, one caller, one ticket per call (`*` to listen to all of a caller's). */
  result: (queue: string, callerId: string, ticket: string) => `ratchet.v1.results.${queue}.${callerId}.${ticket}`,
} as const;
