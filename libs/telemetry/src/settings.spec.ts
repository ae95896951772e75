import { DEFAULT_OTLP_TIMEOUT_MS, resolveTelemetrySettings, serviceNameOfScript } from './settings';

describe('resolveTelemetrySettings', () => {
  const config = { tracesExporter: 'otlp', otlpEndpoint: 'http://collector:4318', serviceNamespace: 'team-a' } as const;

  it('exports nothing, and names the service ratchet, when nothing is configured', () => {
    expect(resolveTelemetrySettings({})).toEqual({ serviceName: 'ratchet', serviceNamespace: 'ratchet', traces: 'none', otlpEndpoint: undefined, metricsFromEnv: false, logsFromEnv: false });
  });

  it('takes the service name from OTEL_SERVICE_NAME, then RATCHET_SERVICE_NAME, then OTEL_RESOURCE_ATTRIBUTES', () => {
    expect(resolveTelemetrySettings({ OTEL_SERVICE_NAME: 'a', RATCHET_SERVICE_NAME: 'b' }).serviceName).toBe('a');
    expect(resolveTelemetrySettings({ OTEL_SERVICE_NAME: ' ', RATCHET_SERVICE_NAME: 'b' }).serviceName).toBe('b');
    expect(resolveTelemetrySettings({ OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,service.name=c' }).serviceName).toBeUndefined();
  });

  it('follows the config when no OTEL_ variable says otherwise', () => {
    expect(resolveTelemetrySettings({}, config)).toEqual(expect.objectContaining({ traces: 'sdk', otlpEndpoint: 'http://collector:4318', serviceNamespace: 'team-a' }));
    expect(resolveTelemetrySettings({}, { ...config, tracesExporter: 'console' }).traces).toBe('console');
    expect(resolveTelemetrySettings({}, { ...config, tracesExporter: 'none' }).traces).toBe('none');
  });

  it('lets the standard variables win over the config', () => {
    expect(resolveTelemetrySettings({ OTEL_TRACES_EXPORTER: 'none' }, config).traces).toBe('none');
    expect(resolveTelemetrySettings({ OTEL_TRACES_EXPORTER: 'console' }, { ...config, tracesExporter: 'none' }).traces).toBe('sdk');
    const withEndpoint = resolveTelemetrySettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://other:4318/v1/traces' }, { ...config, tracesExporter: 'none' });
    expect(withEndpoint).toEqual(expect.objectContaining({ traces: 'sdk', otlpEndpoint: undefined }));
  });

  it('exports metrics and OTel logs only when their variable asks for it', () => {
    expect(resolveTelemetrySettings({ OTEL_METRICS_EXPORTER: 'prometheus', OTEL_LOGS_EXPORTER: '' })).toEqual(expect.objectContaining({ metricsFromEnv: true, logsFromEnv: false }));
  });

  it('names a service after its main script when nothing else names it', () => {
    expect(serviceNameOfScript('/app/services/sandbox-runner/dist/main.js')).toBe('sandbox-runner');
    expect(serviceNameOfScript('services/planner/dist/main.js')).toBe('planner');
    expect(serviceNameOfScript('/app/services/cli/bin/ratchet.js')).toBeUndefined();
    expect(serviceNameOfScript(undefined)).toBeUndefined();
    expect(resolveTelemetrySettings({}, undefined, '/app/services/memory/dist/main.js').serviceName).toBe('memory');
    expect(resolveTelemetrySettings({ RATCHET_SERVICE_NAME: 'cli' }, undefined, '/app/services/memory/dist/main.js').serviceName).toBe('cli');
    expect(resolveTelemetrySettings({ OTEL_RESOURCE_ATTRIBUTES: 'service.name=x' }, undefined, '/app/services/memory/dist/main.js').serviceName).toBeUndefined();
  });

  it('bounds each export by a short timeout unless an OTLP timeout variable sets one', () => {
    expect(resolveTelemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }).otlpTimeoutMs).toBe(DEFAULT_OTLP_TIMEOUT_MS);
    expect(resolveTelemetrySettings({}, config).otlpTimeoutMs).toBe(DEFAULT_OTLP_TIMEOUT_MS);
    expect(resolveTelemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TIMEOUT: '20000' }).otlpTimeoutMs).toBeUndefined();
    expect(resolveTelemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_EXPORTER_OTLP_TRACES_TIMEOUT: '1000' }).otlpTimeoutMs).toBeUndefined();
    // Nothing exported, nothing to bound.
    expect(resolveTelemetrySettings({}).otlpTimeoutMs).toBeUndefined();
  });
});
