export { AppError, ErrorCode, parseErrorCode } from './app-error';
export type { AppErrorOptions } from './app-error';
export { DEFAULT_QUOTE_CHARS, quoted } from './quoted';
export { backoffDelay, sleepUnlessAborted } from './backoff';
export type { BackoffOptions } from './backoff';
export { retryUntilOpen } from './retry-until-open';
export type { RetryUntilOpenOptions } from './retry-until-open';
