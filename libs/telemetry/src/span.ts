import { context, SpanStatusCode, trace } from '@opentelemetry/api';
import type { Attributes, Context, Span, SpanKind } from '@opentelemetry/api';
import { W3CTraceContextPropagator } from '@opentelemetry/core';

const TRACER_NAME = 'ratchet';

export interface SpanOptions {
  readonly kind?: SpanKind;
  readonly attributes?: Attributes;
}

/**
 * Runs `fn` inside a new active span. A throw or rejection is recorded on the
 * span with ERROR status and rethrown; the span always ends, in `finally`.
 * Without a registered SDK the span is a no-op and costs almost nothing.
 */
export function withSpan<T>(name: string, options: SpanOptions, fn: (span: Span) => T): T {
  return trace.getTracer(TRACER_NAME).startActiveSpan(name, { kind: options.kind, attributes: options.attributes }, (span) => {
    let result: T;
    try {
      result = fn(span);
    } catch (error) {
      fail(span, error);
      span.end();
      throw error;
    }
    if (result instanceof Promise) {
      return result.then(
        (value: unknown) => {
          span.end();
          return value;
        },
        (error: unknown) => {
          fail(span, error);
          span.end();
          throw error;
        },
      ) as T;
    }
    span.end();
    return result;
  });
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

/** Writes `traceparent` (and `tracestate`) of `ctx` (default: the active context) into `carrier`. */
export function injectTraceContext(carrier: Record<string, string>, ctx: Context = context.active()): void {
  propagator.inject(ctx, carrier, setter);
}

/** A context whose remote parent is the span described by the carrier's `traceparent`; the active context when absent. */
export function extractTraceContext(carrier: Readonly<Record<string, string>>, ctx: Context = context.active()): Context {
  return propagator.extract(ctx, carrier as Record<string, string>, getter);
}

/** Trace and span id of the active span, or undefined outside a (recording or remote) span. */
export function currentTraceIds(): { traceId: string; spanId: string } | undefined {
  const spanContext = trace.getSpan(context.active())?.spanContext();
  if (!spanContext || !trace.isSpanContextValid(spanContext)) return undefined;
  return { traceId: spanContext.traceId, spanId: spanContext.spanId };
}
