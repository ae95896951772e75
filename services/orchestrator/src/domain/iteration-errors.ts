/** The `code` of an iteration's ErrorDetail: why an attempt failed, as the reflector and `ratchet show` see it. */
export const IterationErrorCode = {
  /** The safety check blocked the code. */
  SAFETY_BLOCKED: 'SAFETY_BLOCKED',
  /** The safety check blocked the generated tests; they are rewritten. */
  TESTS_BLOCKED: 'TESTS_BLOCKED',
  /** The generated tests do not parse; they are rewritten. */
  TESTS_UNPARSEABLE: 'TESTS_UNPARSEABLE',
  /** Tests ran and failed (or timed out, or ran out of memory). */
  TESTS_FAILED: 'TESTS_FAILED',
  /** A model's reply stayed invalid after its repair round. */
  MODEL_REPLY_INVALID: 'MODEL_REPLY_INVALID',
  /** The optional review phase asked for changes. */
  REVIEW_REJECTED: 'REVIEW_REJECTED',
  /** The optional security audit found problems. */
  AUDIT_FINDINGS: 'AUDIT_FINDINGS',
  /** The install step of the task's dependencies failed; the tests did not run. */
  DEPENDENCY_INSTALL_FAILED: 'DEPENDENCY_INSTALL_FAILED',
  /** The workspace's setup command failed (or was refused a host); nothing else ran. */
  SETUP_FAILED: 'SETUP_FAILED',
} as const;
export type IterationErrorCode = (typeof IterationErrorCode)[keyof typeof IterationErrorCode];
