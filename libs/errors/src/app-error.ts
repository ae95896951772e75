/**
 * Stable error codes. Callers branch on these (or on `isRetryable`), never on
 * message text. The names follow gRPC status codes so they map one-to-one at
 * the gRPC edge; Ratchet-specific failures get their own names.
 */
export const ErrorCode = {
  INVALID_ARGUMENT: 'INVALID_ARGUMENT',
  NOT_FOUND: 'NOT_FOUND',
  ALREADY_EXISTS: 'ALREADY_EXISTS',
  FAILED_PRECONDITION: 'FAILED_PRECONDITION',
  PERMISSION_DENIED: 'PERMISSION_DENIED',
  UNAUTHENTICATED: 'UNAUTHENTICATED',
  RESOURCE_EXHAUSTED: 'RESOURCE_EXHAUSTED',
  DEADLINE_EXCEEDED: 'DEADLINE_EXCEEDED',
  CANCELLED: 'CANCELLED',
  ABORTED: 'ABORTED',
  UNAVAILABLE: 'UNAVAILABLE',
  UNIMPLEMENTED: 'UNIMPLEMENTED',
  INTERNAL: 'INTERNAL',
  CONFIG_INVALID: 'CONFIG_INVALID',
} as const;

export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

const knownCodes = new Set<string>(Object.values(ErrorCode));

/** Codes that are worth retrying when the caller does not say otherwise. */
const retryableByDefault = new Set<ErrorCode>([ErrorCode.UNAVAILABLE, ErrorCode.ABORTED, ErrorCode.RESOURCE_EXHAUSTED]);

export interface AppErrorOptions {
  /** Overrides the code's default retryability. */
  retryable?: boolean;
  cause?: unknown;
}

/**
 * The one error type that crosses module and process boundaries. `code` is
 * stable, `message` says what happened and what to do about it.
 */
export class AppError extends Error {
  override readonly name = 'AppError';
  readonly code: ErrorCode;
  readonly isRetryable: boolean;

  constructor(code: ErrorCode, message: string, options: AppErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.isRetryable = options.retryable ?? retryableByDefault.has(code);
  }

  /** True for any AppError, including one from another copy of this module. */
  static is(value: unknown): value is AppError {
    return value instanceof AppError || (value instanceof Error && value.name === 'AppError' && typeof (value as AppError).code === 'string');
  }

  /**
   * Wraps anything thrown into an AppError. An AppError passes through
   * unchanged; anything else becomes `INTERNAL` with the original as cause.
   */
  static from(value: unknown, fallbackMessage = 'internal error'): AppError {
    if (AppError.is(value)) return value;
    const message = value instanceof Error ? value.message : fallbackMessage;
    return new AppError(ErrorCode.INTERNAL, message || fallbackMessage, { cause: value });
  }
}

/** Parses a code received from another process; unknown codes become `INTERNAL`. */
export function parseErrorCode(value: string | undefined): ErrorCode {
  return value !== undefined && knownCodes.has(value) ? (value as ErrorCode) : ErrorCode.INTERNAL;
}
