import type { FastifyInstance } from 'fastify';
import { TaskEvent, type WatchTaskResponse } from '@ratchet/contracts';
import { httpFailureOf } from '../domain/http-errors';
import { fromSequenceOf, idOf } from '../domain/requests';
import { bearerTokenOf, callOptionsOf, type HandlerContext } from './context';

/** How often an idle stream sends a comment, ms: proxies close connections that stay silent for a minute or so. */
const keepAliveMs = 15_000;

/** One Server-Sent Event; `data` is JSON on one line. */
function sse(event: string, data: unknown, id?: number): string {
  return `${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

/**
 * GET /api/tasks/:taskId/events: the task's events as Server-Sent Events,
 * so the task page follows it live. Each `task-event` carries the event as
 * the contract's JSON (`TaskEvent.toJSON`) and its sequence as the event
 * id, so a reconnecting client resumes with `Last-Event-ID` (or `?from=`).
 * The stream ends with an `end` event after TaskCompleted; a failure after
 * the first event is an `error` event with the same body as a failed
 * request. A failure before it (no token, an unknown task) is a plain
 * JSON error with its status, as for any other request.
 */
export function registerTaskEventRoutes(server: FastifyInstance, context: HandlerContext): void {
  server.get<{ Params: { taskId: string } }>('/api/tasks/:taskId/events', async (request, reply) => {
    const options = callOptionsOf(context, request, reply);
    const taskId = idOf(request.params.taskId, 'task');
    const fromSequence = fromSequenceOf(request.query, request.headers['last-event-id']?.toString());
    const stopped = new AbortController();
    const abort = () => stopped.abort();
    options.signal.addEventListener('abort', abort, { once: true });
    context.streams.add(stopped);
    const events = context.orchestrator.watchTask({ taskId, fromSequence, followAfterCompletion: false }, { ...options, signal: stopped.signal })[Symbol.asyncIterator]();
    let first: IteratorResult<WatchTaskResponse>;
    try {
      first = await events.next();
    } catch (error) {
      context.streams.delete(stopped);
      throw error;
    }
    // From here on the answer is the stream: errors become events on it.
    void reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-store', connection: 'keep-alive', 'x-accel-buffering': 'no' });
    const keepAlive = setInterval(() => raw.write(': keep-alive\n\n'), keepAliveMs);
    try {
      for (let next = first; next.done !== true; next = await events.next()) {
        const event = next.value.event;
        if (event !== undefined) raw.write(sse('task-event', TaskEvent.toJSON(event), event.sequence));
        if (stopped.signal.aborted) break;
      }
      if (!stopped.signal.aborted) raw.write(sse('end', {}));
    } catch (error) {
      if (!stopped.signal.aborted) {
        const failure = httpFailureOf(error, bearerTokenOf(request) !== undefined, context.tokenHint);
        if (failure.status >= 500) request.log.warn({ taskId, err: (error as Error).message }, 'task event stream failed');
        raw.write(sse('error', failure.body));
      }
    } finally {
      clearInterval(keepAlive);
      options.signal.removeEventListener('abort', abort);
      context.streams.delete(stopped);
      await events.return?.().catch(() => undefined);
      raw.end();
    }
  });
}
