import { backoffDelay, sleepUnlessAborted } from '@ratchet/errors';
import { parseServerSentEvents } from './sse';
import type { ErrorBody, TaskEvent } from './types';

/** A failed request: the gateway's error code and message, and the HTTP status. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
    this.name = 'ApiError';
  }

  /** The token is missing or was refused: the person must sign in (again). */
  get needsSignIn(): boolean {
    return this.status === 401;
  }
}

const tokenKey = 'ratchet.token';

/**
 * The bearer token of this browser tab. Kept in sessionStorage: it lasts
 * while the tab is open and no other site can read it.
 */
export const tokenStore = {
  get: (): string | undefined => sessionStorage.getItem(tokenKey) ?? undefined,
  set: (token: string) => sessionStorage.setItem(tokenKey, token),
  clear: () => sessionStorage.removeItem(tokenKey),
};

/**
 * A token handed over in the address (`ratchet ui` prints
 * `http://127.0.0.1:PORT/#token=...`): stored, and removed from the
 * address bar and history. A fragment never reaches a server or a log.
 */
export function takeTokenFromAddress(): void {
  const match = /(?:^#|&)token=([^&]+)/.exec(window.location.hash);
  if (match?.[1] === undefined) return;
  tokenStore.set(decodeURIComponent(match[1]));
  window.history.replaceState(null, '', window.location.pathname + window.location.search);
}

function headers(extra: Record<string, string> = {}): Record<string, string> {
  const token = tokenStore.get();
  return { accept: 'application/json', ...(token === undefined ? {} : { authorization: `Bearer ${token}` }), ...extra };
}

/** The ApiError of a failed response, from its JSON body when it has one. */
async function errorOf(response: Response): Promise<ApiError> {
  let body: ErrorBody | undefined;
  try {
    body = (await response.json()) as ErrorBody;
  } catch {
    body = undefined;
  }
  return new ApiError(response.status, body?.error?.code ?? 'UNKNOWN', body?.error?.message ?? `the dashboard answered ${response.status} ${response.statusText}`);
}

/**
 * Calls the gateway: GET without a body, POST with one (as JSON).
 *
 * @throws ApiError for a failed answer, or UNAVAILABLE when the gateway cannot be reached.
 */
export async function api<T>(path: string, options: { method?: 'GET' | 'POST'; body?: unknown; signal?: AbortSignal } = {}): Promise<T> {
  let response: Response;
  try {
    response = await fetch(path, {
      method: options.method ?? (options.body === undefined ? 'GET' : 'POST'),
      headers: headers(options.body === undefined ? {} : { 'content-type': 'application/json' }),
      ...(options.body === undefined ? {} : { body: JSON.stringify(options.body) }),
      ...(options.signal === undefined ? {} : { signal: options.signal }),
    });
  } catch (error) {
    if (options.signal?.aborted) throw error;
    throw new ApiError(0, 'UNAVAILABLE', `the dashboard's server cannot be reached (${(error as Error).message}); is it still running?`);
  }
  if (!response.ok) throw await errorOf(response);
  return (await response.json()) as T;
}

export interface FollowHandlers {
  onEvents(events: TaskEvent[]): void;
  /** The task completed: the stream ended after its TaskCompleted. */
  onEnd(): void;
  /** A failure; `willRetry` when the stream reconnects by itself. */
  onError(error: ApiError, willRetry: boolean): void;
}

/** Errors a reconnect may cure. */
const transient = new Set(['UNAVAILABLE', 'DEADLINE_EXCEEDED', 'ABORTED', 'INTERNAL', 'UNKNOWN']);

/**
 * Follows a task's events from `fromSequence` (0: its whole history) until
 * it completes or `signal` aborts. Events come in batches (one per chunk
 * read); a dropped connection resumes after the last event seen.
 */
export async function followTaskEvents(taskId: string, fromSequence: number, handlers: FollowHandlers, signal: AbortSignal): Promise<void> {
  let last = fromSequence > 0 ? fromSequence - 1 : 0;
  // Reconnects in a row without an event between them: the wait doubles from 1 s to 15 s.
  let failures = 0;
  while (!signal.aborted) {
    let failure: ApiError | undefined;
    try {
      const response = await fetch(`/api/tasks/${encodeURIComponent(taskId)}/events?from=${last + 1}`, { headers: headers({ accept: 'text/event-stream' }), signal });
      if (!response.ok || response.body === null) throw await errorOf(response);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = '';
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        const parsed = parseServerSentEvents(buffer + value);
        buffer = parsed.rest;
        const batch: TaskEvent[] = [];
        for (const message of parsed.events) {
          if (message.event === 'task-event') {
            const event = JSON.parse(message.data) as TaskEvent;
            last = Math.max(last, event.sequence ?? 0);
            batch.push(event);
          } else if (message.event === 'error') {
            const body = JSON.parse(message.data) as ErrorBody;
            failure = new ApiError(500, body.error?.code ?? 'UNKNOWN', body.error?.message ?? 'the event stream failed');
          } else if (message.event === 'end') {
            if (batch.length > 0) handlers.onEvents(batch);
            handlers.onEnd();
            return;
          }
        }
        if (batch.length > 0) {
          failures = 0;
          handlers.onEvents(batch);
        }
      }
    } catch (error) {
      if (signal.aborted) return;
      failure = error instanceof ApiError ? error : new ApiError(0, 'UNAVAILABLE', `the event stream broke (${(error as Error).message})`);
    }
    // Ended without its `end` event: the connection dropped, or the server failed.
    const retry = failure === undefined || transient.has(failure.code);
    if (failure !== undefined) handlers.onError(failure, retry);
    if (!retry) return;
    failures += 1;
    await sleepUnlessAborted(backoffDelay(failures, 1_000, 15_000), signal);
  }
}
