import { resolveTelemetrySettings } from './settings';

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
});
