import { AppError, ErrorCode } from '@ratchet/errors';

/** The JSON body of every failed `/api` request. */
export interface ErrorBody {
  readonly error: { readonly code: ErrorCode; readonly message: string };
}

/**
 * The HTTP status of each error code, in one place. CANCELLED is 499
 * ("client closed request", nginx's convention): only a browser that went
 * away cancels a call, and nobody reads that answer.
 */
export const httpStatusOfCode: Readonly<Record<ErrorCode, number>> = {
  [ErrorCode.INVALID_ARGUMENT]: 400,
  [ErrorCode.UNAUTHENTICATED]: 401,
  [ErrorCode.PERMISSION_DENIED]: 403,
  [ErrorCode.NOT_FOUND]: 404,
  [ErrorCode.ALREADY_EXISTS]: 409,
  [ErrorCode.FAILED_PRECONDITION]: 409,
  [ErrorCode.ABORTED]: 409,
  [ErrorCode.RESOURCE_EXHAUSTED]: 429,
  [ErrorCode.CANCELLED]: 499,
  [ErrorCode.INTERNAL]: 500,
  [ErrorCode.CONFIG_INVALID]: 500,
  [ErrorCode.UNIMPLEMENTED]: 501,
  [ErrorCode.UNAVAILABLE]: 503,
  [ErrorCode.DEADLINE_EXCEEDED]: 504,
};

/** What a failed request answers: its status and body. */
export interface HttpFailure {
  readonly status: number;
  readonly body: ErrorBody;
}

/** Where a server's tokens come from, as the sign-in messages say it by default. */
export const serverTokenHint = 'an operator makes one with `ratchet token`';

/** Said when the caller sent no token and one is needed; `hint` says where tokens come from. */
export function signInMessage(hint: string = serverTokenHint): string {
  return `sign in: this dashboard needs your Ratchet token (${hint})`;
}

/** Said when the token the caller sent was refused. */
export function tokenRefusedMessage(hint: string = serverTokenHint): string {
  return `the token was refused: sign in again with a valid Ratchet token (${hint})`;
}

/** Said when the orchestrator cannot be reached (its own message names the CLI's switches and the address). */
export const unavailableMessage = 'the Ratchet server is not reachable right now: try again in a moment, and if it lasts, ask an operator to check the orchestrator';

/**
 * The HTTP answer to a failure. An AppError keeps its code and message,
 * except UNAUTHENTICATED and UNAVAILABLE, whose messages are said for a
 * browser (the orchestrator's and the gRPC client's name the CLI's
 * `--token` and `--server`); anything else is an INTERNAL error whose
 * detail stays in the log.
 *
 * @param hadToken whether the request carried a bearer token.
 * @param tokenHint where tokens come from, for the sign-in messages.
 */
export function httpFailureOf(error: unknown, hadToken: boolean, tokenHint: string = serverTokenHint): HttpFailure {
  if (!AppError.is(error)) return { status: 500, body: { error: { code: ErrorCode.INTERNAL, message: "internal error; the dashboard's log has the details" } } };
  const message =
    error.code === ErrorCode.UNAUTHENTICATED ? (hadToken ? tokenRefusedMessage(tokenHint) : signInMessage(tokenHint)) : error.code === ErrorCode.UNAVAILABLE ? unavailableMessage : error.message;
  return { status: httpStatusOfCode[error.code] ?? 500, body: { error: { code: error.code, message } } };
}

/**
 * The AppError of an error fastify itself raised before a handler ran
 * (a body that is not JSON, too large, of another media type), or
 * undefined for any other error.
 */
export function requestErrorOf(error: unknown, bodyLimitBytes: number): AppError | undefined {
  const fastifyError = error as { code?: unknown; statusCode?: unknown; message?: unknown };
  if (typeof fastifyError.code !== 'string' || !fastifyError.code.startsWith('FST_')) return undefined;
  switch (fastifyError.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new AppError(ErrorCode.INVALID_ARGUMENT, `the request body is not valid JSON (${String(fastifyError.message)}); send a JSON object with Content-Type: application/json`);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new AppError(ErrorCode.RESOURCE_EXHAUSTED, `the request body is over ${bodyLimitBytes} bytes, the most this dashboard takes`, { retryable: false });
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new AppError(ErrorCode.INVALID_ARGUMENT, 'send the request body as JSON, with Content-Type: application/json');
    default:
      // Fastify's other request errors carry a 4xx status and a message for the client.
      if (typeof fastifyError.statusCode === 'number' && fastifyError.statusCode >= 400 && fastifyError.statusCode < 500) return new AppError(ErrorCode.INVALID_ARGUMENT, String(fastifyError.message));
      return undefined;
  }
}
