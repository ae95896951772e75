import type pinoModule from 'pino';
import type { DestinationStream, Level, Logger } from 'pino';
import { currentTraceIds } from './span';

export type { Logger };

export interface LoggerOptions {
  readonly service: string;
  /** pino level; default `info`. */
  readonly level?: Level | 'silent';
  /** Where JSON lines go; default stdout. */
  readonly destination?: DestinationStream;
  /**
   * Applied to every JSON line before it is written (secrets out of logs,
   * whatever field holds them). Its replacements must keep JSON valid: no
   * quotes or backslashes.
   */
  readonly redact?: (line: string) => string;
}

/**
 * A pino JSON logger whose records carry `service`, `pid`, an ISO `time` and,
 * inside a valid span, `trace_id` and `span_id`, so logs and traces join up in
 * Grafana. Default level `info`, default destination stdout.
 * @throws Error from pino when `level` is not one of its levels.
 */
export function createLogger(options: LoggerOptions): Logger {
  // Loaded by the first logger, not with this library: a process that logs nothing (a CLI command talking to a server) never loads it.
  const pino = require('pino') as typeof pinoModule;
  return pino(
    {
      level: options.level ?? 'info',
      base: { service: options.service, pid: process.pid },
      timestamp: pino.stdTimeFunctions.isoTime,
      mixin: () => {
        const ids = currentTraceIds();
        return ids ? { trace_id: ids.traceId, span_id: ids.spanId } : {};
      },
      ...(options.redact === undefined ? {} : { hooks: { streamWrite: options.redact } }),
    },
    options.destination,
  );
}
