import { AppError, ErrorCode } from '@ratchet/errors';

/** SQLSTATE classes that mean the server or connection went away, not that the statement was wrong. */
const connectionLost = /^(08|57P0[1-3]|53300)/;

/** An AppError for a failed statement, keeping the Postgres error as the cause. */
export function sqlError(error: unknown, sql: string): AppError {
  if (AppError.is(error)) return error;
  const code = typeof error === 'object' && error !== null && 'code' in error && typeof (error as { code: unknown }).code === 'string' ? (error as { code: string }).code : '';
  const message = error instanceof Error ? error.message : String(error);
  const statement = sql.trim().split(/\s+/).slice(0, 6).join(' ');
  const text = `${message}${code === '' ? '' : ` (SQLSTATE ${code})`} in: ${statement}...`;
  if (code === '23505') return new AppError(ErrorCode.ALREADY_EXISTS, text, { cause: error });
  if (code.startsWith('23')) return new AppError(ErrorCode.FAILED_PRECONDITION, text, { cause: error });
  if (connectionLost.test(code) || /ECONNREFUSED|ECONNRESET|Connection terminated|connection is closed/i.test(message)) {
    return new AppError(ErrorCode.UNAVAILABLE, `database connection lost: ${text}`, { cause: error, retryable: true });
  }
  return new AppError(ErrorCode.INTERNAL, text, { cause: error });
}
