export { createLogger } from './logger';
export type { Logger, LoggerOptions } from './logger';
export { currentTraceIds, extractTraceContext, injectTraceContext, withSpan } from './span';
export type { SpanOptions } from './span';
