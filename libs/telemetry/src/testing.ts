import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { InMemorySpanExporter, SimpleSpanProcessor, TracerProvider } from '@opentelemetry/sdk-trace';
import type { ReadableSpan } from '@opentelemetry/sdk-trace';
import { metricDefinitions, processMetrics } from './metrics';

export interface InMemoryTracing {
  readonly exporter: InMemorySpanExporter;
  /** Finished spans, in the order they ended. */
  spans(): ReadableSpan[];
  reset(): void;
  /** Unregisters the provider and context manager. */
  shutdown(): Promise<void>;
}

/**
 * Registers, globally, a tracer provider that keeps every finished span in
 * memory (exported synchronously when it ends), with the AsyncLocalStorage
 * context manager so context follows awaits. For tests that assert on traces;
 * call `shutdown()` after each test.
 * @throws Error when a tracer provider or context manager is already
 *   registered (a previous installation was not shut down, or an SDK is
 *   preloaded), since spans would then silently go elsewhere.
 */
export function installInMemoryTracing(): InMemoryTracing {
  const exporter = new InMemorySpanExporter();
  const provider = new TracerProvider({ spanProcessors: [new SimpleSpanProcessor({ exporter })] });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  if (!context.setGlobalContextManager(contextManager)) {
    contextManager.disable();
    throw new Error('installInMemoryTracing: a context manager is already registered; shut down the previous installation (or do not preload the SDK in tests)');
  }
  if (!trace.setGlobalTracerProvider(provider)) {
    context.disable();
    throw new Error('installInMemoryTracing: a tracer provider is already registered; shut down the previous installation (or do not preload the SDK in tests)');
  }
  return {
    exporter,
    spans: () => exporter.getFinishedSpans(),
    reset: () => exporter.reset(),
    shutdown: async () => {
      await provider.shutdown();
      trace.disable();
      context.disable();
    },
  };
}

/**
 * The current value of one series of this process's metrics registry (a
 * histogram's `_count` too), or 0 when the metric has no series yet (metrics
 * are registered when first used).
 * @throws Error when `series` names no Ratchet metric, so a typo cannot pass as 0.
 */
export async function metricValue(series: string, labels: Record<string, string> = {}): Promise<number> {
  const name = series.replace(/_count$/, '');
  if (!Object.values(metricDefinitions).some((definition) => definition.name === name)) throw new Error(`${name} is not a Ratchet metric`);
  const metric = processMetrics().registry.getSingleMetric(name);
  if (metric === undefined) return 0;
  const { values } = await metric.get();
  const found = values.find((entry) => ((entry as { metricName?: string }).metricName ?? name) === series && Object.entries(labels).every(([key, wanted]) => String(entry.labels[key]) === wanted));
  return found?.value ?? 0;
}
