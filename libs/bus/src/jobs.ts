import { context as otelContext, SpanKind } from '@opentelemetry/api';
import { AppError, backoffDelay, ErrorCode, sleepUnlessAborted } from '@ratchet/errors';
import { extractTraceContext, injectTraceContext, withSpan } from '@ratchet/telemetry';
import type { BusLogger } from './logger';
import type { MessageCodec } from './definitions';
import type { Delivery, Headers, Puller, Transport, WorkQueueOptions } from './transport';

export interface Job<T> {
  readonly id: string;
  readonly message: T;
  readonly headers: Readonly<Headers>;
  /** 1 on first delivery. */
  readonly deliveryCount: number;
  /** Aborts when the consumer stops and gives the job back. */
  readonly signal: AbortSignal;
}

export interface ConsumeOptions extends WorkQueueOptions {
  /** Jobs worked on at once by this consumer; it pulls no more than that. Default 1. */
  readonly concurrency?: number;
  /** How long one pull waits for a job, in ms. Default 1000 (NATS's minimum). */
  readonly pullExpiresMs?: number;
  /** First redelivery delay after a retryable failure, in ms, doubled per delivery. Default 200. */
  readonly retryBackoffMs?: number;
  readonly logger?: BusLogger;
}

export interface JobConsumer {
  readonly inFlight: number;
  /**
   * Stops pulling, waits up to `graceMs` for jobs in flight, then gives the
   * rest back to the queue (nak) so another consumer gets them at once.
   */
  stop(graceMs: number): Promise<void>;
}

/**
 * Enqueues a job with trace context in its headers. Enqueuing the same `id`
 * twice within the dedup window (two minutes) stores it once.
 */
export async function enqueueJob<T>(transport: Transport, queue: string, codec: MessageCodec<T>, message: T, options: { id: string; headers?: Headers }): Promise<void> {
  const headers: Headers = { ...options.headers };
  injectTraceContext(headers);
  await transport.enqueue(queue, codec.encode(message).finish(), { id: options.id, headers });
}

/**
 * Works a queue at-least-once: a job is acked after `handler` resolves;
 * a retryable failure hands it back with backoff; a non-retryable failure,
 * a malformed payload or the last allowed delivery moves it to the
 * dead-letter queue. While a handler runs, the ack deadline is kept alive, so
 * only a consumer that died (or hung its event loop) loses its jobs to others.
 */
export async function consumeJobs<T>(
  transport: Transport,
  queue: string,
  codec: MessageCodec<T>,
  handler: (job: Job<T>) => Promise<void>,
  options: ConsumeOptions = {},
): Promise<JobConsumer> {
  // The queue's consumer may have been created with other settings by a connection this one cannot override: follow them.
  const { ackWaitMs, maxDeliver } = await transport.ensureWorkQueue(queue, { ackWaitMs: options.ackWaitMs ?? 30_000, maxDeliver: options.maxDeliver ?? 5 });
  if (ackWaitMs !== (options.ackWaitMs ?? 30_000) || maxDeliver !== (options.maxDeliver ?? 5)) {
    options.logger?.warn({ queue, ackWaitMs, maxDeliver }, "the queue's consumer keeps the settings it was created with; change them where it is created (the orchestrator)");
  }
  const concurrency = Math.max(1, options.concurrency ?? 1);
  const stopping = new AbortController();
  const active = new Set<{ delivery: Delivery; controller: AbortController; done: Promise<void> }>();
  const pullers: Puller[] = [];
  for (let slot = 0; slot < concurrency; slot++) pullers.push(await transport.puller(queue));

  const work = async (delivery: Delivery, controller: AbortController) => {
    let message: T;
    try {
      message = codec.decode(delivery.data);
    } catch (error) {
      options.logger?.warn({ queue, jobId: delivery.id, err: error }, 'malformed job payload, dead-lettered');
      await deadLetter(delivery, `INVALID_ARGUMENT: malformed payload: ${(error as Error).message}`);
      return;
    }
    // The handler's own work keeps the process alive; the heartbeat must not.
    const heartbeat = setInterval(() => delivery.working(), Math.max(50, Math.floor(ackWaitMs / 3))).unref();
    try {
      await otelContext.with(extractTraceContext(delivery.headers), () =>
        withSpan(`job ${queue}`, { kind: SpanKind.CONSUMER, attributes: { 'messaging.destination.name': queue, 'ratchet.job_id': delivery.id, 'ratchet.delivery_count': delivery.deliveryCount } }, () =>
          handler({ id: delivery.id, message, headers: delivery.headers, deliveryCount: delivery.deliveryCount, signal: controller.signal }),
        ),
      );
      clearInterval(heartbeat);
      if (controller.signal.aborted) return; // already handed back during shutdown
      await delivery.ack();
    } catch (error) {
      clearInterval(heartbeat);
      if (controller.signal.aborted) return;
      const appError = AppError.from(error);
      if (appError.isRetryable && delivery.deliveryCount < maxDeliver) {
        options.logger?.warn({ queue, jobId: delivery.id, code: appError.code, delivery: delivery.deliveryCount }, 'job failed, will be redelivered');
        delivery.nak(backoffDelay(delivery.deliveryCount, options.retryBackoffMs ?? 200, 30_000, { jitter: true }));
      } else {
        options.logger?.error({ queue, jobId: delivery.id, code: appError.code, err: error }, 'job failed for good, dead-lettered');
        await deadLetter(delivery, `${appError.code}: ${appError.message}`);
      }
    }
  };

  const deadLetter = async (delivery: Delivery, reason: string) => {
    try {
      await transport.deadLetter(queue, delivery, reason);
      delivery.term();
    } catch (error) {
      // Could not store it: leave the job to be redelivered rather than lose it.
      options.logger?.error({ queue, jobId: delivery.id, err: error }, 'could not dead-letter job; it will be redelivered');
      delivery.nak(1_000);
    }
  };

  const loop = async (puller: Puller) => {
    let failures = 0;
    while (!stopping.signal.aborted) {
      let delivery: Delivery | null;
      try {
        delivery = await puller.next(options.pullExpiresMs ?? 1_000);
        failures = 0;
      } catch (error) {
        if (AppError.is(error) && !error.isRetryable) {
          // The connection is gone for good (closed): deliveries come back to other consumers.
          if (!stopping.signal.aborted) options.logger?.warn({ queue, err: error }, 'consumer stopped: transport closed');
          break;
        }
        failures += 1;
        options.logger?.warn({ queue, err: error }, 'pull failed, retrying');
        await sleepUnlessAborted(backoffDelay(failures, 100, 5_000, { jitter: true }), stopping.signal);
        continue;
      }
      if (!delivery) continue;
      if (stopping.signal.aborted) {
        delivery.nak();
        break;
      }
      const controller = new AbortController();
      const entry = { delivery, controller, done: work(delivery, controller) };
      active.add(entry);
      await entry.done.finally(() => active.delete(entry));
    }
    await puller.close().catch(() => undefined);
  };

  const loops = pullers.map((puller) => loop(puller));

  return {
    get inFlight() {
      return active.size;
    },
    async stop(graceMs) {
      stopping.abort();
      let timer: NodeJS.Timeout | undefined;
      const finished = await Promise.race([
        Promise.all([...active].map((entry) => entry.done)).then(() => true),
        new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), graceMs))),
      ]);
      clearTimeout(timer);
      if (!finished) {
        for (const entry of active) {
          entry.controller.abort(new AppError(ErrorCode.CANCELLED, 'consumer stopping; job handed back'));
          entry.delivery.nak();
        }
      }
      // A handler that ignores its abort signal must not hold shutdown hostage.
      const giveUp = new AbortController();
      await Promise.race([Promise.allSettled(loops), sleepUnlessAborted((options.pullExpiresMs ?? 1_000) + 1_000, giveUp.signal)]);
      giveUp.abort();
    },
  };
}
