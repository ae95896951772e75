export { createLogger } from './logger';
export type { Logger, LoggerOptions } from './logger';
export { captureTraceContext, currentTraceIds, extractTraceContext, injectTraceContext, linkActiveSpan, restoreTraceContext, setSpanAttributes, withSpan } from './span';
export type { SpanOptions } from './span';
export { resolveTelemetrySettings } from './settings';
export type { TelemetrySettings } from './settings';
export { createMetrics, exportedMetrics, METRIC_PREFIX, metricDefinitions, processMetrics } from './metrics';
export type { MetricDefinition, RatchetMetrics, ScrapedGauge } from './metrics';
