import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { Writable } from 'node:stream';
import { createLogger } from './logger';
import { captureTraceContext, currentTraceIds, extractTraceContext, injectTraceContext, linkActiveSpan, restoreTraceContext, setSpanAttributes, withSpan } from './span';
import { installInMemoryTracing } from './testing';
import type { InMemoryTracing } from './testing';

describe('telemetry', () => {
  let tracing: InMemoryTracing;
  beforeEach(() => {
    tracing = installInMemoryTracing();
  });
  afterEach(() => tracing.shutdown());

  it('ends spans, and records a rejection with ERROR status and the error code', async () => {
    const failure = Object.assign(new Error('model endpoint refused'), { code: 'UNAVAILABLE' });
    await expect(withSpan('planner.plan', { kind: SpanKind.INTERNAL, attributes: { 'ratchet.task_id': 't1' } }, async () => Promise.reject(failure))).rejects.toBe(failure);
    expect(withSpan('sync', {}, () => 42)).toBe(42);
    expect(() => withSpan('sync-throw', {}, () => { throw new TypeError('boom'); })).toThrow('boom');

    const [failed, sync, syncThrow] = tracing.spans();
    expect(failed!.name).toBe('planner.plan');
    expect(failed!.status).toEqual({ code: SpanStatusCode.ERROR, message: 'model endpoint refused' });
    expect(failed!.attributes).toEqual({ 'ratchet.task_id': 't1', 'error.type': 'UNAVAILABLE' });
    expect(failed!.events.map((event) => event.name)).toEqual(['exception']);
    expect(sync!.status.code).toBe(SpanStatusCode.UNSET);
    expect(syncThrow!.status.code).toBe(SpanStatusCode.ERROR);
  });

  it('nests spans across awaits in one trace', async () => {
    await withSpan('outer', {}, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      await withSpan('inner', {}, async () => undefined);
    });
    const [inner, outer] = tracing.spans();
    expect(inner!.spanContext().traceId).toBe(outer!.spanContext().traceId);
    expect(inner!.parentSpanContext?.spanId).toBe(outer!.spanContext().spanId);
  });

  it('round-trips trace context through headers', () => {
    const headers: Record<string, string> = {};
    withSpan('client', {}, () => injectTraceContext(headers));
    const [client] = tracing.spans();
    expect(headers['traceparent']).toBe(`00-${client!.spanContext().traceId}-${client!.spanContext().spanId}-01`);

    const remote = trace.getSpanContext(extractTraceContext(headers));
    expect(remote).toEqual(expect.objectContaining({ traceId: client!.spanContext().traceId, spanId: client!.spanContext().spanId, isRemote: true }));
    // No traceparent: the active context comes back unchanged.
    expect(extractTraceContext({})).toBe(context.active());
  });

  it('parents a span on an extracted context given as option', () => {
    const headers = { traceparent: '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01' };
    withSpan('handle', { parent: extractTraceContext(headers) }, () => undefined);
    const [handled] = tracing.spans();
    expect(handled!.spanContext().traceId).toBe('0af7651916cd43dd8448eb211c80319c');
    expect(handled!.parentSpanContext).toEqual(expect.objectContaining({ spanId: 'b7ad6b7169203331', isRemote: true }));
  });

  it('ends an async span only when its promise settles', async () => {
    let release!: () => void;
    const pending = withSpan('slow', {}, () => new Promise<void>((resolve) => (release = resolve)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(tracing.spans()).toHaveLength(0);
    release();
    await pending;
    expect(tracing.spans().map((span) => span.name)).toEqual(['slow']);
  });

  it('injects nothing outside a span', () => {
    const headers: Record<string, string> = {};
    injectTraceContext(headers);
    expect(headers).toEqual({});
    expect(currentTraceIds()).toBeUndefined();
  });

  it('puts trace and span ids on log records written inside a span', () => {
    const lines: string[] = [];
    const destination = new Writable({ write: (chunk: Buffer, _encoding, done) => (lines.push(chunk.toString()), done()) });
    const logger = createLogger({ service: 'coder', destination });
    logger.info('outside');
    withSpan('write-code', {}, () => logger.info({ files: 3 }, 'inside'));
    const [outside, inside] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const [span] = tracing.spans();
    expect(outside).toEqual(expect.objectContaining({ service: 'coder', msg: 'outside' }));
    expect(outside).not.toHaveProperty('trace_id');
    expect(inside).toEqual(expect.objectContaining({ service: 'coder', msg: 'inside', files: 3, trace_id: span!.spanContext().traceId, span_id: span!.spanContext().spanId }));
  });

  it('parents later work on a captured context, not on whatever context is active then', () => {
    const captured = withSpan('submit', {}, () => captureTraceContext());
    // Later, from inside another task's span: the phase still belongs to the submit's trace.
    withSpan('other task', {}, () => withSpan('phase', { parent: restoreTraceContext(captured) }, () => undefined));
    const [submit, phase, other] = tracing.spans();
    expect(captured).toEqual({ traceparent: `00-${submit!.spanContext().traceId}-${submit!.spanContext().spanId}-01` });
    expect(phase!.spanContext().traceId).toBe(submit!.spanContext().traceId);
    expect(phase!.parentSpanContext?.spanId).toBe(submit!.spanContext().spanId);
    expect(other!.spanContext().traceId).not.toBe(submit!.spanContext().traceId);

    // Nothing captured (an untraced submit): a trace of its own, never the active one's.
    withSpan('other task', {}, () => withSpan('untraced phase', { parent: restoreTraceContext(undefined) }, () => undefined));
    const untraced = tracing.spans().find((span) => span.name === 'untraced phase')!;
    expect(untraced.parentSpanContext).toBeUndefined();
    expect(captureTraceContext()).toEqual({});
  });

  it('sets attributes on, and links, the active span; outside a span both do nothing', () => {
    const captured = withSpan('submit', {}, () => captureTraceContext());
    withSpan('resume', {}, () => {
      setSpanAttributes({ 'ratchet.task_id': 't-7' });
      linkActiveSpan(captured);
      linkActiveSpan({ traceparent: 'garbage' });
      linkActiveSpan(undefined);
    });
    setSpanAttributes({ ignored: true });
    linkActiveSpan(captured);
    const [submit, resume] = tracing.spans();
    expect(resume!.attributes).toEqual({ 'ratchet.task_id': 't-7' });
    expect(resume!.links.map((link) => link.context.spanId)).toEqual([submit!.spanContext().spanId]);
  });
});
