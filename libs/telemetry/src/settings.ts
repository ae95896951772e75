/** The `telemetry` section of Ratchet's config, as far as the preload needs it. */
export interface TelemetryConfigInput {
  readonly tracesExporter: 'none' | 'otlp' | 'console';
  readonly otlpEndpoint?: string | undefined;
  readonly serviceNamespace: string;
}

export interface TelemetrySettings {
  /** Undefined leaves `service.name` to `OTEL_RESOURCE_ATTRIBUTES`. */
  readonly serviceName: string | undefined;
  readonly serviceNamespace: string;
  /**
   * `none`: spans get ids (for logs and headers) and are dropped. `console`:
   * spans are printed. `sdk`: the SDK builds exporters from the `OTEL_*`
   * variables, which means OTLP when `OTEL_TRACES_EXPORTER` is unset.
   */
  readonly traces: 'none' | 'console' | 'sdk';
  /** From config, for `OTEL_EXPORTER_OTLP_ENDPOINT` when no OTLP endpoint variable is set. */
  readonly otlpEndpoint: string | undefined;
  /**
   * For `OTEL_EXPORTER_OTLP_TRACES_TIMEOUT` when no OTLP timeout variable is
   * set: how long one export may take, retries included, ms.
   */
  readonly otlpTimeoutMs: number | undefined;
  /** Metrics and OTel logs are exported only when their `OTEL_*_EXPORTER` variable asks for it. */
  readonly metricsFromEnv: boolean;
  readonly logsFromEnv: boolean;
}

/**
 * Export timeout when none is set, ms. The SDK's own (10 s) is meant for a
 * collector far away; Ratchet's runs beside the services, and an export in
 * flight keeps a stopping process alive until it ends, so a collector that
 * hangs would hold every process's stop for that long.
 */
export const DEFAULT_OTLP_TIMEOUT_MS = 5_000;

const nonEmpty = (value: string | undefined): string | undefined => (value === undefined || value.trim() === '' ? undefined : value.trim());

/**
 * The service a process runs, from the path of its main script
 * (`services/<name>/dist/main.js`, as the image and the dev stack start
 * them), or undefined for any other script.
 */
export function serviceNameOfScript(script: string | undefined): string | undefined {
  return /(?:^|[\\/])services[\\/]([a-z][a-z0-9-]*)[\\/]dist[\\/]main\.js$/.exec(script ?? '')?.[1];
}

/**
 * Decides what the preload sets up. The standard OpenTelemetry variables win
 * (`OTEL_TRACES_EXPORTER`, `OTEL_EXPORTER_OTLP_ENDPOINT`,
 * `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_SERVICE_NAME`), then Ratchet's
 * config (`telemetry.*`, `RATCHET_SERVICE_NAME`), then the service whose
 * `mainScript` runs (`services/<name>/dist/main.js`; see
 * `serviceNameOfScript`). Nothing is exported unless one of them asks for
 * it: the SDK's own default (OTLP to localhost:4318) would retry against a
 * collector that usually does not exist.
 */
export function resolveTelemetrySettings(env: Readonly<Record<string, string | undefined>>, config?: TelemetryConfigInput, mainScript?: string): TelemetrySettings {
  const namedInResource = /(^|,)\s*service\.name\s*=/.test(env['OTEL_RESOURCE_ATTRIBUTES'] ?? '');
  const serviceName = nonEmpty(env['OTEL_SERVICE_NAME']) ?? nonEmpty(env['RATCHET_SERVICE_NAME']) ?? (namedInResource ? undefined : (serviceNameOfScript(mainScript) ?? 'ratchet'));

  const endpointFromEnv = nonEmpty(env['OTEL_EXPORTER_OTLP_ENDPOINT']) ?? nonEmpty(env['OTEL_EXPORTER_OTLP_TRACES_ENDPOINT']);
  const exporters = (nonEmpty(env['OTEL_TRACES_EXPORTER']) ?? '')
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name.length > 0);
  let traces: TelemetrySettings['traces'];
  // The SDK reads `none` alone as "no tracer provider"; here it keeps ids without exporting.
  if (exporters.length > 0) traces = exporters.every((name) => name === 'none') ? 'none' : 'sdk';
  else if (endpointFromEnv) traces = 'sdk';
  else if (config?.tracesExporter === 'otlp') traces = 'sdk';
  else if (config?.tracesExporter === 'console') traces = 'console';
  else traces = 'none';

  return {
    serviceName,
    serviceNamespace: config?.serviceNamespace ?? 'ratchet',
    traces,
    otlpEndpoint: endpointFromEnv === undefined ? nonEmpty(config?.otlpEndpoint) : undefined,
    otlpTimeoutMs: traces === 'sdk' && nonEmpty(env['OTEL_EXPORTER_OTLP_TIMEOUT']) === undefined && nonEmpty(env['OTEL_EXPORTER_OTLP_TRACES_TIMEOUT']) === undefined ? DEFAULT_OTLP_TIMEOUT_MS : undefined,
    metricsFromEnv: nonEmpty(env['OTEL_METRICS_EXPORTER']) !== undefined,
    logsFromEnv: nonEmpty(env['OTEL_LOGS_EXPORTER']) !== undefined,
  };
}
