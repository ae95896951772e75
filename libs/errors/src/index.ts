export { AppError, ErrorCode, parseErrorCode } from './app-error';
export type { AppErrorOptions } from './app-error';
