export { AppError, ErrorCode, parseErrorCode } from './app-error';
export type { AppErrorOptions } from './app-error';
export { DEFAULT_QUOTE_CHARS, quoted } from './quoted';
