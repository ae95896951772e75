export { AppError, ErrorCode, parseErrorCode } from './app-error';
export type { AppErrorOptions } from './app-error';
export { DEFAULT_QUOTE_CHARS, quoted } from './quoted';
export { backoffDelay, retryUntilOpen, sleepUnlessAborted } from './retry-until-open';
export type { RetryUntilOpenOptions } from './retry-until-open';
