import { AppError, ErrorCode, parseErrorCode } from './app-error';

describe('AppError', () => {
  it('derives retryability from the code unless told otherwise', () => {
    expect(new AppError(ErrorCode.UNAVAILABLE, 'down').isRetryable).toBe(true);
    expect(new AppError(ErrorCode.INVALID_ARGUMENT, 'bad').isRetryable).toBe(false);
    expect(new AppError(ErrorCode.INTERNAL, 'flaky', { retryable: true }).isRetryable).toBe(true);
    expect(new AppError(ErrorCode.UNAVAILABLE, 'gone for good', { retryable: false }).isRetryable).toBe(false);
  });

  it('keeps the cause and is an Error', () => {
    const cause = new Error('socket closed');
    const error = new AppError(ErrorCode.UNAVAILABLE, 'nats is down', { cause });
    expect(error).toBeInstanceOf(Error);
    expect(error.cause).toBe(cause);
    expect(error.name).toBe('AppError');
  });

  it('wraps foreign errors as INTERNAL and passes AppErrors through', () => {
    const original = new AppError(ErrorCode.NOT_FOUND, 'no such task');
    expect(AppError.from(original)).toBe(original);
    const wrapped = AppError.from(new TypeError('x is undefined'));
    expect(wrapped.code).toBe(ErrorCode.INTERNAL);
    expect(wrapped.message).toBe('x is undefined');
    expect(AppError.from('a string').message).toBe('internal error');
  });

  it('parses codes from the wire, mapping unknown ones to INTERNAL', () => {
    expect(parseErrorCode('DEADLINE_EXCEEDED')).toBe(ErrorCode.DEADLINE_EXCEEDED);
    expect(parseErrorCode('TEAPOT')).toBe(ErrorCode.INTERNAL);
    expect(parseErrorCode(undefined)).toBe(ErrorCode.INTERNAL);
  });
});
