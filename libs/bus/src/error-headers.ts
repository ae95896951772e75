import { AppError, parseErrorCode } from '@ratchet/errors';
import { Header } from './headers';
import type { Headers } from './transport';

/** Errors travel as headers on an empty reply; the caller rebuilds the AppError. */
export function errorToHeaders(error: AppError): Headers {
  return {
    [Header.ERROR_CODE]: error.code,
    // Header values are single-line.
    [Header.ERROR_MESSAGE]: error.message.replace(/[\r\n]+/g, ' ').slice(0, 4096),
    [Header.ERROR_RETRYABLE]: String(error.isRetryable),
  };
}

/** The AppError carried by a reply, or undefined for a successful reply. */
export function errorFromHeaders(headers: Headers, origin: string): AppError | undefined {
  const code = headers[Header.ERROR_CODE];
  if (code === undefined) return undefined;
  const message = headers[Header.ERROR_MESSAGE] ?? `${origin} failed with ${code}`;
  return new AppError(parseErrorCode(code), message, { retryable: headers[Header.ERROR_RETRYABLE] === 'true' });
}
