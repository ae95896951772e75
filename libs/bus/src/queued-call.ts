import { createHmac, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { MessageCodec } from './definitions';
import { errorFromHeaders, errorToHeaders } from './error-headers';
import { Header, isSubjectToken, Subjects } from './headers';
import { consumeJobs, enqueueJob, type ConsumeOptions, type Job, type JobConsumer } from './jobs';
import type { Subscription, Transport } from './transport';

/** Header naming the subject a queued call's result goes to. */
export const REPLY_TO_HEADER = 'ratchet-reply-to';
/** The caller's job id; the queue's own message id adds a per-call ticket to it. */
const CALL_JOB_HEADER = 'ratchet-call-job-id';
/** A secret made for one call: the worker signs the result with it (see `Header.RESULT_SIGNATURE`). */
const RESULT_KEY_HEADER = 'ratchet-result-key';
/** Marks a worker's question to the caller, before it runs a job: does this call still wait? Answered '1' or '0'. */
const PROBE_HEADER = 'ratchet-still-waiting';
/** How long a worker waits for the caller's answer to that question before it runs the job anyway, ms. */
const probeTimeoutMs = 2_000;

/**
 * HMAC-SHA256, base64url, of everything a result says: the subject it was
 * sent to (so it answers this call only), its error headers and its bytes.
 */
function resultSignature(key: string, subject: string, headers: Readonly<Record<string, string>>, data: Uint8Array): string {
  const mac = createHmac('sha256', Buffer.from(key, 'base64url'));
  mac.update(`${subject}\n${headers[Header.ERROR_CODE] ?? ''}\n${headers[Header.ERROR_RETRYABLE] ?? ''}\n${headers[Header.ERROR_MESSAGE] ?? ''}\n`);
  mac.update(data);
  return mac.digest('base64url');
}

function sameSignature(expected: string, given: string | undefined): boolean {
  if (given === undefined) return false;
  const left = Buffer.from(expected);
  const right = Buffer.from(given);
  return left.length === right.length && timingSafeEqual(left, right);
}

export interface QueuedCallOptions {
  /** Time for the whole call, queueing included, ms. Ignored when `deadline` is set. */
  readonly timeoutMs?: number;
  /** Absolute deadline, epoch ms. */
  readonly deadline?: number;
  readonly signal?: AbortSignal;
}

export interface QueueCaller<Q, R> {
  /**
   * Enqueues `message` as job `jobId` and resolves with its result. A job
   * that runs twice (its first worker died after finishing) answers twice;
   * the second answer is ignored. A call for a job id this caller already
   * waits on supersedes that call (its caller, e.g. a process that died and
   * asked again through a new one, gave up on it): the older call fails
   * with CANCELLED, and its job is not run if no worker has started it.
   *
   * @throws AppError DEADLINE_EXCEEDED when no worker answered in time (with
   *   advice naming the queue); CANCELLED when `signal` aborts or a newer
   *   call for the same job id supersedes this one; the worker's error when
   *   the job failed for good.
   */
  call(jobId: string, message: Q, options?: QueuedCallOptions): Promise<R>;
  /** Stops listening for results; pending calls fail with CANCELLED. */
  close(): Promise<void>;
}

/** Why a queued call's result was not taken. */
export const DroppedResult = {
  /** No call waits for it: a duplicate answer, or one after the caller gave up. */
  LATE: 'late',
  /** It does not carry the signature of the call's key: not from a worker that was given the job. */
  UNSIGNED: 'unsigned',
} as const;
export type DroppedResult = (typeof DroppedResult)[keyof typeof DroppedResult];

/**
 * Calls through a work queue: the job goes to whichever worker has room
 * (see `serveFromQueue`), and its result comes back on a subject only this
 * caller listens to. Unlike a plain RPC, a worker pulls only what it has
 * capacity for, and a job whose worker dies is redelivered to another.
 *
 * Each call puts a fresh secret in its job; a result counts only when it is
 * signed with it, so a client that can reach the result subject but was
 * never given the job cannot answer in the worker's place. Results that do
 * not count are dropped and reported to `onDropped`.
 */
export function createQueueCaller<Q, R>(
  transport: Transport,
  queue: string,
  codecs: { request: MessageCodec<Q>; response: MessageCodec<R> },
  options: { defaultTimeoutMs?: number; onDropped?: (dropped: { reason: DroppedResult; subject: string; jobId?: string }) => void } = {},
): QueueCaller<Q, R> {
  const callerId = randomUUID();
  const pending = new Map<string, { jobId: string; key: string; resolve(value: R): void; reject(error: AppError): void }>();
  // The ticket of the newest call for each job id still waiting.
  const newest = new Map<string, string>();
  let subscription: Subscription | undefined;
  const listen = () => {
    subscription ??= transport.subscribe(Subjects.result(queue, callerId, '*'), { queue: callerId }, (incoming) => {
      const ticket = incoming.subject.slice(incoming.subject.lastIndexOf('.') + 1);
      // A worker asking before it runs a job: a call superseded, cancelled or timed out no longer waits.
      if (incoming.headers[PROBE_HEADER] !== undefined) {
        incoming.respond(new TextEncoder().encode(pending.has(ticket) ? '1' : '0'));
        return;
      }
      incoming.respond(new Uint8Array());
      const waiter = pending.get(ticket);
      if (waiter === undefined) {
        options.onDropped?.({ reason: DroppedResult.LATE, subject: incoming.subject });
        return;
      }
      if (!sameSignature(resultSignature(waiter.key, incoming.subject, incoming.headers, incoming.data), incoming.headers[Header.RESULT_SIGNATURE])) {
        // Not from a worker holding the job; the real result may still come.
        options.onDropped?.({ reason: DroppedResult.UNSIGNED, subject: incoming.subject, jobId: waiter.jobId });
        return;
      }
      pending.delete(ticket);
      const error = errorFromHeaders(incoming.headers, `queue ${queue}`);
      if (error !== undefined) waiter.reject(error);
      else {
        try {
          waiter.resolve(codecs.response.decode(incoming.data));
        } catch (decodeError) {
          waiter.reject(new AppError(ErrorCode.INTERNAL, `malformed result from queue ${queue}: ${(decodeError as Error).message}`, { cause: decodeError }));
        }
      }
    });
  };

  return {
    async call(jobId, message, callOptions = {}) {
      if (!isSubjectToken(jobId)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `job id ${JSON.stringify(jobId)} must be letters, digits, - or _`);
      listen();
      const deadline = callOptions.deadline ?? Date.now() + (callOptions.timeoutMs ?? options.defaultTimeoutMs ?? 60_000);
      // A fresh ticket per call: a job enqueued again after a crash must not wait on the first call's answer.
      const ticket = randomUUID();
      const key = randomBytes(32).toString('base64url');
      const result = new Promise<R>((resolve, reject) => pending.set(ticket, { jobId, key, resolve, reject }));
      const superseded = newest.get(jobId);
      newest.set(jobId, ticket);
      const older = superseded === undefined ? undefined : pending.get(superseded);
      if (superseded !== undefined && older !== undefined) {
        // Gone from `pending` at once: a worker asking about its job from now on hears that nobody waits.
        pending.delete(superseded);
        older.reject(new AppError(ErrorCode.CANCELLED, `job ${jobId} was asked for again; this call was superseded`));
      }
      let timer: NodeJS.Timeout | undefined;
      const onAbort = () => pending.get(ticket)?.reject(new AppError(ErrorCode.CANCELLED, `job ${jobId} was cancelled by the caller`));
      try {
        callOptions.signal?.addEventListener('abort', onAbort, { once: true });
        const expired = new Promise<never>((_, reject) => {
          timer = setTimeout(
            () =>
              reject(
                new AppError(ErrorCode.DEADLINE_EXCEEDED, `no worker finished job ${jobId} from queue ${queue} in time; check that its workers (sandbox-runner processes) are running`, {
                  retryable: true,
                }),
              ),
            Math.max(0, deadline - Date.now()),
          );
        });
        await enqueueJob(transport, queue, codecs.request, message, {
          id: `${jobId}.${ticket}`.replace(/\./g, '_'),
          headers: { [REPLY_TO_HEADER]: Subjects.result(queue, callerId, ticket), [Header.DEADLINE]: String(deadline), [CALL_JOB_HEADER]: jobId, [RESULT_KEY_HEADER]: key },
        });
        return await Promise.race([result, expired]);
      } finally {
        clearTimeout(timer);
        callOptions.signal?.removeEventListener('abort', onAbort);
        pending.delete(ticket);
        if (newest.get(jobId) === ticket) newest.delete(jobId);
      }
    },
    async close() {
      newest.clear();
      for (const [ticket, waiter] of pending) {
        pending.delete(ticket);
        waiter.reject(new AppError(ErrorCode.CANCELLED, `the caller of queue ${queue} closed`));
      }
      await subscription?.unsubscribe();
    },
  };
}

/** What a queued job's handler knows: the job and the caller's deadline. */
export interface QueuedJobContext {
  readonly job: Job<unknown>;
  /** The caller's absolute deadline, epoch ms (Infinity when it sent none). */
  readonly deadline: number;
  /** Aborts when the worker stops and hands the job back. */
  readonly signal: AbortSignal;
}

/**
 * Works `queue` for `createQueueCaller` callers: runs each job with
 * `handler` (at most `concurrency` at once) and sends the result, or a
 * final error, to the caller. A retryable failure is redelivered (to any
 * worker) until `maxDeliver`; a caller that is gone does not fail the job.
 * Before a job runs, its caller is asked whether the call still waits: one
 * that answers no (superseded, cancelled, past its deadline) has its job
 * dropped unrun (`onSkipped`); no answer in time runs it as before.
 */
export function serveFromQueue<Q, R>(
  transport: Transport,
  queue: string,
  codecs: { request: MessageCodec<Q>; response: MessageCodec<R> },
  handler: (message: Q, context: QueuedJobContext) => Promise<R>,
  options: ConsumeOptions & { onUndelivered?: (jobId: string, error: AppError) => void; onSkipped?: (jobId: string) => void } = {},
): Promise<JobConsumer> {
  return consumeJobs(
    transport,
    queue,
    codecs.request,
    async (job) => {
      const replyTo = job.headers[REPLY_TO_HEADER];
      const deadline = Number(job.headers[Header.DEADLINE] ?? Infinity);
      const jobId = job.headers[CALL_JOB_HEADER] ?? job.id;
      let data: Uint8Array = new Uint8Array();
      let headers: Record<string, string> = {};
      // A job nobody waits for any more (its call superseded by a newer one for the same job) is dropped, not run.
      if (replyTo !== undefined && !(await stillWaiting(transport, replyTo))) {
        options.onSkipped?.(jobId);
        return;
      }
      try {
        // A job redelivered after its caller's deadline helps nobody: report it instead of running it.
        if (Number.isFinite(deadline) && Date.now() >= deadline) {
          throw new AppError(ErrorCode.DEADLINE_EXCEEDED, `job ${jobId} reached a worker after its caller's deadline; not run`);
        }
        data = codecs.response.encode(await handler(job.message, { job, deadline: Number.isFinite(deadline) ? deadline : Infinity, signal: job.signal })).finish();
      } catch (error) {
        const appError = AppError.from(error);
        if (appError.isRetryable && job.deliveryCount < (options.maxDeliver ?? 5) && !job.signal.aborted) throw appError;
        headers = errorToHeaders(appError);
      }
      if (replyTo === undefined) return;
      const key = job.headers[RESULT_KEY_HEADER];
      if (key !== undefined) headers = { ...headers, [Header.RESULT_SIGNATURE]: resultSignature(key, replyTo, headers, data) };
      try {
        await transport.request(replyTo, data, { timeoutMs: 5_000, headers });
      } catch (error) {
        // The caller is gone (it crashed or gave up): its task will run the phase again.
        options.onUndelivered?.(jobId, AppError.from(error));
      }
    },
    options,
  );
}

/**
 * Whether the call a job answers still waits for it, as its caller says.
 * Only a definite no counts: a caller that does not answer in time, or that
 * cannot be reached, gets the job run as before (its result is then dropped
 * if nobody waits).
 */
async function stillWaiting(transport: Transport, replyTo: string): Promise<boolean> {
  try {
    const answer = await transport.request(replyTo, new Uint8Array(), { timeoutMs: probeTimeoutMs, headers: { [PROBE_HEADER]: '1' } });
    return new TextDecoder().decode(answer.data) !== '0';
  } catch {
    return true;
  }
}
