import { AppError, ErrorCode } from '@ratchet/errors';

/** A SQLSTATE: five characters, its class a digit and a character, or one of the few lettered classes. Node's own codes (EPIPE) are not. */
const sqlState = /^([0-9][0-9A-Z]|F0|HV|P0|XX)[0-9A-Z]{3}$/;
/** SQLSTATEs that mean the server or connection went away, not that the statement was wrong. */
const connectionLostState = /^(08|57P0[1-3])/;
/** What pg and Node say when the connection is lost, or cannot be made, without a SQLSTATE. */
const connectionLostText = /ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|EHOSTUNREACH|ENOTFOUND|Connection terminated|connection is closed|not queryable/i;
/** pg-pool when every connection is busy for longer than its connection timeout. */
const poolExhaustedText = /timeout exceeded when trying to connect/i;

/**
 * Postgres' own report of a failed statement: its message, SQLSTATE and the
 * start of the statement, for logs. It is the cause of the AppError
 * `sqlError` returns, never that error's message, so it does not reach
 * clients (gRPC and the bus send only the message).
 */
export class SqlFailure extends Error {
  override readonly name = 'SqlFailure';

  constructor(
    message: string,
    /** The SQLSTATE, '' when the failure had none (a lost socket). */
    readonly sqlState: string,
    cause: unknown,
  ) {
    super(message, { cause });
  }
}

/**
 * An AppError for a failed statement. Its message is safe to show a client:
 * it names neither the SQLSTATE nor the statement nor Postgres' text (which
 * can quote the client's data and the schema); all three are in the cause,
 * a SqlFailure, which servers log (GrpcServer logs an internal error's cause).
 *
 * - 22xxx data exceptions (a NUL character, bytes that are not UTF-8, a
 *   value too long or out of range) -> INVALID_ARGUMENT: the data came from
 *   the request.
 * - 23505 unique violation -> ALREADY_EXISTS; other 23xxx -> FAILED_PRECONDITION.
 * - lost connection (08xxx, 57P01-57P03, a dropped socket), too many
 *   connections (53300) and an exhausted pool -> UNAVAILABLE, retryable.
 * - anything else -> INTERNAL "database error".
 *
 * An AppError passes through unchanged.
 */
export function sqlError(error: unknown, sql: string): AppError {
  if (AppError.is(error)) return error;
  const candidate = typeof error === 'object' && error !== null && 'code' in error ? (error as { code: unknown }).code : undefined;
  const state = typeof candidate === 'string' && sqlState.test(candidate) ? candidate : '';
  const raw = error instanceof Error ? error.message : String(error);
  const statement = sql.trim().split(/\s+/).slice(0, 6).join(' ');
  const tag = state === '' ? '' : ` (SQLSTATE ${state})`;
  const failure = new SqlFailure(`${raw}${tag} in: ${statement}...`, state, error);
  const { code, message, retryable } = classify(state, raw, typeof candidate === 'string' ? candidate : '');
  // The SQLSTATE is the log's (in the cause): it tells a client only which database and schema the server runs.
  return new AppError(code, `${message.what}${message.todo === undefined ? '' : `; ${message.todo}`}`, { cause: failure, ...(retryable === undefined ? {} : { retryable }) });
}

interface Message {
  readonly what: string;
  readonly todo?: string;
}

function classify(state: string, raw: string, nodeCode: string): { code: ErrorCode; message: Message; retryable?: boolean } {
  if (state.startsWith('22')) return { code: ErrorCode.INVALID_ARGUMENT, message: dataProblem(state, raw) };
  if (state === '23505') return { code: ErrorCode.ALREADY_EXISTS, message: { what: 'a record with the same key already exists' } };
  if (state.startsWith('23')) return { code: ErrorCode.FAILED_PRECONDITION, message: { what: 'the change conflicts with other stored records (an integrity constraint refused it)', todo: 'check that what it refers to still exists' } };
  if (state === '53300' || /too many (clients|connections)/i.test(raw) || poolExhaustedText.test(raw)) {
    return { code: ErrorCode.UNAVAILABLE, message: { what: 'the database has no free connection right now', todo: 'retry shortly' }, retryable: true };
  }
  if (connectionLostState.test(state) || connectionLostText.test(raw) || connectionLostText.test(nodeCode)) {
    return { code: ErrorCode.UNAVAILABLE, message: { what: 'the database connection was lost', todo: 'retry shortly' }, retryable: true };
  }
  return { code: ErrorCode.INTERNAL, message: { what: 'database error', todo: 'the server log has the details' } };
}

/** A plain description of a 22xxx data exception, saying what to change. */
function dataProblem(state: string, raw: string): Message {
  // 22021 invalid byte sequence (a NUL in text), 22P05 untranslatable character ("\u0000 cannot be converted to text" in jsonb).
  if (state === '22021' || state === '22P05' || /\\u0000|0x00/.test(raw)) {
    return { what: 'a text value contains a NUL character (\\u0000) or bytes that are not valid UTF-8, which cannot be stored', todo: 'remove it (only text is stored, not binary files)' };
  }
  if (state === '22001') return { what: 'a value is longer than the database stores', todo: 'send a shorter one' };
  if (state === '22003') return { what: 'a number is out of the range the database stores', todo: 'send a smaller one' };
  if (state === '22007' || state === '22008') return { what: 'a date, time or duration is out of the range the database stores', todo: 'send a nearer one' };
  return { what: 'a value in the request cannot be stored', todo: 'check the values sent' };
}
