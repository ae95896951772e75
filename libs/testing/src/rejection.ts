import { AppError } from '@ratchet/errors';

/**
 * The AppError `promise` rejects with, for tests that assert on its code
 * and message.
 *
 * @throws Error when the promise resolves, or rejects with something that
 *   is not an AppError.
 */
export async function rejectionOf(promise: Promise<unknown>): Promise<AppError> {
  const outcome = await promise.then(
    () => ({ resolved: true as const }),
    (error: unknown) => ({ resolved: false as const, error }),
  );
  if (outcome.resolved) throw new Error('expected a failure, but the call succeeded');
  if (!AppError.is(outcome.error)) throw new Error(`expected an AppError, got ${String(outcome.error)}`);
  return outcome.error;
}
