// Preloaded with `node --require @ratchet/telemetry/register main.js`, so the
// SDK is in place before application code loads and creates spans.
//
// What is exported follows resolveTelemetrySettings: the standard OTEL_*
// variables, then the `telemetry` section of Ratchet's config. By default
// nothing leaves the process, but spans still get ids, so logs carry trace_id
// and trace context still crosses the bus.
//
// Exporting never holds up the work: the SDK's env-built OTLP exporter sits
// behind a BatchSpanProcessor (spans are queued, at most
// OTEL_BSP_MAX_QUEUE_SIZE of them, and sent in the background), each export
// gives up after OTEL_EXPORTER_OTLP_TIMEOUT (5 s unless set; see
// settings.ts), retries included, and the last flush when the process ends
// is cut off after EXIT_FLUSH_TIMEOUT_MS. A collector that is down or hangs
// costs spans, never a task.
import { trace } from '@opentelemetry/api';
import { getBooleanFromEnv } from '@opentelemetry/core';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { NodeSDK } from '@opentelemetry/sdk-node';
import { ConsoleSpanExporter, NoopSpanProcessor, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import type { SpanProcessor } from '@opentelemetry/sdk-trace';
import { loadConfig, telemetryConfigSchema } from '@ratchet/config';
import type { TelemetryConfig } from '@ratchet/config';
import { z } from 'zod';
import { resolveTelemetrySettings, serviceNameOfScript } from './settings';

/** How long a signal's default action, or the end of the process, waits for the last spans to leave, ms. */
const EXIT_FLUSH_TIMEOUT_MS = 5_000;
const SIGNALS = ['SIGTERM', 'SIGINT'] as const;

const warn = (message: string): void => {
  process.stderr.write(`telemetry: ${message}\n`);
};

// The script node runs after this preload, e.g. services/planner/dist/main.js.
const mainScript = process.argv[1];

function readTelemetryConfig(): TelemetryConfig | undefined {
  try {
    // Only the telemetry section: the rest belongs to the service, which
    // validates it (and reports its problems) itself.
    const schema = z.looseObject({ telemetry: telemetryConfigSchema });
    const serviceName = process.env['RATCHET_SERVICE_NAME']?.trim() || serviceNameOfScript(mainScript);
    return loadConfig({ schema, service: serviceName }).telemetry;
  } catch (error) {
    warn(`ignoring the telemetry config, exporting only what OTEL_* variables ask for: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
}

function start(): NodeSDK | undefined {
  if (getBooleanFromEnv('OTEL_SDK_DISABLED')) return undefined;
  const settings = resolveTelemetrySettings(process.env, readTelemetryConfig(), mainScript);
  // The SDK's OTLP exporters take their endpoint and timeout from the environment only.
  if (settings.traces === 'sdk' && settings.otlpEndpoint) process.env['OTEL_EXPORTER_OTLP_ENDPOINT'] = settings.otlpEndpoint;
  if (settings.otlpTimeoutMs !== undefined) process.env['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT'] = String(settings.otlpTimeoutMs);

  let spanProcessors: SpanProcessor[] | undefined;
  if (settings.traces === 'none') spanProcessors = [new NoopSpanProcessor()];
  else if (settings.traces === 'console') spanProcessors = [new SimpleSpanProcessor({ exporter: new ConsoleSpanExporter() })];

  const sdk = new NodeSDK({
    serviceName: settings.serviceName,
    // OTEL_RESOURCE_ATTRIBUTES is merged over this, so it can still override the namespace.
    resource: defaultResource().merge(resourceFromAttributes({ 'service.namespace': settings.serviceNamespace })),
    spanProcessors,
    // The SDK defaults both to OTLP, which would poll a collector that is usually not there.
    metricReaders: settings.metricsFromEnv ? undefined : [],
    logRecordProcessors: settings.logsFromEnv ? undefined : [],
  });
  try {
    sdk.start();
  } catch (error) {
    // Losing traces must not stop the service.
    warn(`could not start OpenTelemetry, running without it: ${error instanceof Error ? error.message : String(error)}`);
    return undefined;
  }
  return sdk;
}

function installShutdownHooks(sdk: NodeSDK): void {
  let shutdown: Promise<void> | undefined;
  const shutdownOnce = (): Promise<void> => {
    shutdown ??= sdk.shutdown().catch((error: unknown) => {
      warn(`flushing spans failed: ${error instanceof Error ? error.message : String(error)}`);
    });
    return shutdown;
  };

  // The normal end: the app has closed everything and the loop has drained.
  // A collector that does not answer would keep the process alive for the
  // exporter's whole timeout, so the flush gets a bounded time, then the
  // process ends with the exit code the app set.
  process.once('beforeExit', () => {
    const timer = setTimeout(() => {
      warn(`gave up sending the last spans after ${EXIT_FLUSH_TIMEOUT_MS} ms: the collector did not answer`);
      process.exit();
    }, EXIT_FLUSH_TIMEOUT_MS);
    void shutdownOnce().finally(() => clearTimeout(timer));
  });

  const onSignal = (signal: NodeJS.Signals): void => {
    if (process.listenerCount(signal) > 1) {
      // The app handles this signal and decides when to exit; spans it
      // records while draining go out at beforeExit. Send what has ended so
      // far now, in case it ends with process.exit().
      void forceFlush();
      return;
    }
    // Listening to a signal turns off its default action (exit), so without
    // an app handler restore it: flush, then raise the signal again.
    process.removeListener(signal, onSignal);
    const raise = () => process.kill(process.pid, signal);
    const timer = setTimeout(raise, EXIT_FLUSH_TIMEOUT_MS);
    void shutdownOnce().then(() => {
      clearTimeout(timer);
      raise();
    });
  };
  for (const signal of SIGNALS) process.on(signal, onSignal);
}

async function forceFlush(): Promise<void> {
  const provider = trace.getTracerProvider() as { getDelegate?: () => unknown };
  const delegate = provider.getDelegate?.() as { forceFlush?: () => Promise<void> } | undefined;
  try {
    await delegate?.forceFlush?.();
  } catch (error) {
    warn(`flushing spans failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

const sdk = start();
if (sdk) installShutdownHooks(sdk);
