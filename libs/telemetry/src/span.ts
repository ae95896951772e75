import { context, ROOT_CONTEXT, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Attributes, Context, Span, SpanKind } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

const TRACER_NAME = 'ratchet';

export interface SpanOptions {
  /** Default: INTERNAL. */
  readonly kind?: SpanKind;
  readonly attributes?: Attributes;
  /** Context to take the parent span from, e.g. `extractTraceContext(headers)`; default: the active context. */
  readonly parent?: Context;
}

/**
 * Runs `fn` inside a new span that is the active one for `fn` and everything
 * it awaits, so nested `withSpan` calls become its children. A throw or a
 * rejection is recorded on the span (exception event, ERROR status, and
 * `error.type` from an `AppError`'s code) and rethrown unchanged; the span
 * always ends, when `fn` returns or its promise settles. Default kind:
 * INTERNAL. Without a registered SDK the span is a no-op and costs almost
 * nothing.
 * @throws whatever `fn` throws; a returned promise rejects with its own reason.
 */
export function withSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => T): T {
  return trace.getTracer(TRACER_NAME).startActiveSpan(name, { kind: options.kind, attributes: options.attributes }, options.parent ?? context.active(), (span) => {
    // An async fn's span ends when its promise settles, not when it returns.
    let endsLater = false;
    try {
      const result = fn(span);
      if (isPromiseLike(result)) {
        endsLater = true;
        return Promise.resolve(result)
          .catch((error: unknown) => {
            fail(span, error);
            throw error;
          })
          .finally(() => span.end()) as T;
      }
      return result;
    } catch (error) {
      fail(span, error);
      throw error;
    } finally {
      if (!endsLater) span.end();
    }
  });
}

function isPromiseLike(value: unknown): value is PromiseLike<unknown> {
  return (typeof value === 'object' || typeof value === 'function') && value !== null && typeof (value as { then?: unknown }).then === 'function';
}

function fail(span: Span, error: unknown): void {
  span.recordException(error instanceof Error ? error : String(error));
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.message : String(error) });
  const code = (error as { code?: unknown } | null)?.code;
  if (typeof code === 'string') span.setAttribute('error.type', code);
}

// An explicit W3C propagator rather than the global one: the global is a no-op
// until an SDK registers, and trace context must cross the bus regardless.
const propagator = new W3CTraceContextPropagator();
const setter = { set: (carrier: Record<string, string>, key: string, value: string) => void (carrier[key] = value) };
const getter = {
  keys: (carrier: Record<string, string>) => Object.keys(carrier),
  get: (carrier: Record<string, string>, key: string) => carrier[key],
};

/**
 * Writes the W3C `traceparent` (and `tracestate`, if any) of the span in `ctx`
 * (default: the active context) into `carrier`, e.g. message headers. Writes
 * nothing when there is no valid span. Works with or without a registered SDK.
 */
export function injectTraceContext(carrier: Record<string, string>, ctx: Context = context.active()): void {
  propagator.inject(ctx, carrier, setter);
}

/**
 * The context to run a handler in: `ctx` (default: the active context) with
 * the remote span described by the carrier's `traceparent` as parent. Returns
 * `ctx` itself when the header is missing or malformed.
 */
export function extractTraceContext(carrier: Readonly<Record<string, string>>, ctx: Context = context.active()): Context {
  return propagator.extract(ctx, carrier as Record<string, string>, getter);
}

/**
 * The W3C trace context of the active span as a new carrier, to store with
 * work that goes on later, elsewhere or after a restart (a task's phases):
 * `{ traceparent, tracestate? }`, or `{}` outside a valid span.
 */
export function captureTraceContext(): Record<string, string> {
  const carrier: Record<string, string> = {};
  injectTraceContext(carrier);
  return carrier;
}

/**
 * The context that goes on with a trace captured by `captureTraceContext`:
 * its span is the parent of spans started in it, whatever context is active
 * now (a timer's, or another task's that happened to start this work).
 * Without a valid `traceparent` it is the root context, so spans started in
 * it begin a trace of their own.
 */
export function restoreTraceContext(carrier: Readonly<Record<string, string>> | undefined): Context {
  return extractTraceContext(carrier ?? {}, ROOT_CONTEXT);
}

/** Sets attributes on the active span, e.g. an id learnt while it runs; does nothing outside a span. */
export function setSpanAttributes(attributes: Attributes): void {
  trace.getActiveSpan()?.setAttributes(attributes);
}

/**
 * Links the active span to the span of a captured trace context: work on
 * something that lives in another trace (a resume or an approval of a task
 * whose phases run in the trace of its submit) points to it. Does nothing
 * outside a span or without a valid `traceparent`.
 */
export function linkActiveSpan(carrier: Readonly<Record<string, string>> | undefined): void {
  const linked = trace.getSpanContext(restoreTraceContext(carrier));
  if (linked !== undefined && trace.isSpanContextValid(linked)) trace.getActiveSpan()?.addLink({ context: linked });
}

/**
 * Trace and span id (lower-case hex, 32 and 16 characters) of the active span,
 * or undefined outside a valid span.
 */
export function currentTraceIds(): { traceId: string; spanId: string } | undefined {
  const spanContext = trace.getSpan(context.active())?.spanContext();
  if (!spanContext || !trace.isSpanContextValid(spanContext)) return undefined;
  return { traceId: spanContext.traceId, spanId: spanContext.spanId };
}
