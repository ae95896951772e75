import { configuredSecrets } from '@ratchet/redaction';
import { createClient, InProcessTransport } from '@ratchet/bus';
import { baseConfigSchema, loadConfig } from '@ratchet/config';
import { HealthStatus, PlannerServiceDefinition } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { createMetrics } from '@ratchet/telemetry';
import { Registry } from 'prom-client';
import { checkOpsSettings, isLoopbackHost, startOpsServer, type OpsServer } from './ops-server';
import { hostService, type RunningService } from './service-host';

const token = 'metrics-token-for-tests';

describe('operations server', () => {
  let transport: InProcessTransport;
  let running: RunningService;
  let ops: OpsServer;
  let base: string;
  // What the checks report; each test sets what it needs.
  const dependencies = { store: true, cache: true };

  beforeAll(async () => {
    transport = new InProcessTransport();
    running = hostService(
      {
        name: 'planner',
        version: '1.2.3',
        definition: PlannerServiceDefinition,
        checks: [
          { name: 'store', required: true, check: async () => ({ ok: dependencies.store, detail: dependencies.store ? 'up' : 'connection refused' }) },
          { name: 'cache', required: false, check: async () => ({ ok: dependencies.cache, detail: dependencies.cache ? 'up' : 'timed out' }) },
        ],
      },
      { transport },
    );
    const metrics = createMetrics(new Registry());
    metrics.serviceInfo.set({ service_name: 'planner', version: '1.2.3' }, 1);
    ops = await startOpsServer({ port: 0, host: '127.0.0.1', token, registry: metrics.registry, health: async () => (await running.health()).status });
    base = `http://127.0.0.1:${ops.port}`;
  });
  afterAll(async () => {
    await ops?.close();
    await transport?.close();
  });
  beforeEach(() => Object.assign(dependencies, { store: true, cache: true }));

  const get = async (path: string, headers: Record<string, string> = {}) => {
    const response = await fetch(`${base}${path}`, { headers });
    return { status: response.status, body: await response.text(), headers: response.headers };
  };

  it('answers /livez while the process runs', async () => {
    expect(await get('/livez')).toEqual(expect.objectContaining({ status: 200, body: 'ok\n' }));
  });

  it('serves /metrics in the Prometheus text format only with the bearer token', async () => {
    const missing = await get('/metrics');
    expect(missing.status).toBe(401);
    expect(missing.headers.get('www-authenticate')).toBe('Bearer realm="ratchet-metrics"');
    expect(missing.body).not.toContain('ratchet_');
    expect((await get('/metrics', { authorization: 'Bearer not-the-token' })).status).toBe(401);
    expect((await get('/metrics', { authorization: token })).status).toBe(401);

    const scraped = await get('/metrics', { authorization: `Bearer ${token}` });
    expect(scraped.status).toBe(200);
    expect(scraped.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(scraped.body).toContain('# TYPE ratchet_service_info gauge');
    expect(scraped.body).toContain('ratchet_service_info{service_name="planner",version="1.2.3"} 1');
  });

  it('answers /readyz with the status word of the Health report: 200 when serving or degraded, 503 when a required dependency is down', async () => {
    const client = createClient(transport, PlannerServiceDefinition);
    expect(await get('/readyz')).toEqual(expect.objectContaining({ status: 200, body: 'SERVING\n' }));

    dependencies.cache = false;
    expect(await get('/readyz')).toEqual(expect.objectContaining({ status: 200, body: 'DEGRADED\n' }));
    expect((await client.health({})).status).toBe(HealthStatus.HEALTH_STATUS_DEGRADED);

    dependencies.store = false;
    const down = await get('/readyz');
    expect(down).toEqual(expect.objectContaining({ status: 503, body: 'NOT_SERVING\n' }));
    // The probe says nothing about which dependency is down, or why.
    expect(down.body).not.toMatch(/store|refused/);
    expect((await client.health({})).status).toBe(HealthStatus.HEALTH_STATUS_NOT_SERVING);
  });

  it('refuses other paths and methods', async () => {
    expect((await get('/')).status).toBe(404);
    expect((await fetch(`${base}/metrics`, { method: 'POST' })).status).toBe(405);
  });

  it('reports a port in use as a config error naming the variable', async () => {
    const error = await startOpsServer({ port: ops.port, host: '127.0.0.1', registry: new Registry(), health: async () => HealthStatus.HEALTH_STATUS_SERVING }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe(ErrorCode.CONFIG_INVALID);
    expect((error as AppError).message).toMatch(new RegExp(`telemetry\\.metrics\\.port ${ops.port} .*in use: set RATCHET_TELEMETRY_METRICS_PORT`));
  });

  it('answers NOT_SERVING once the service drains', async () => {
    await running.stop(1_000);
    expect(await get('/readyz')).toEqual(expect.objectContaining({ status: 503, body: 'NOT_SERVING\n' }));
    expect((await get('/livez')).status).toBe(200);
  });
});

describe('checkOpsSettings', () => {
  const settings = { port: 9464, host: '0.0.0.0', allowUnauthenticated: false };

  it('refuses to serve metrics beyond this machine without a token, saying what to set', () => {
    let caught: unknown;
    try {
      checkOpsSettings(settings);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(AppError);
    expect((caught as AppError).code).toBe(ErrorCode.CONFIG_INVALID);
    expect((caught as AppError).message).toMatch(/set RATCHET_TELEMETRY_METRICS_TOKEN/);
    expect((caught as AppError).message).toMatch(/RATCHET_TELEMETRY_METRICS_ALLOW_UNAUTHENTICATED=true/);
  });

  it('accepts a token, an explicit opt-out, a loopback host, or no server at all', () => {
    expect(() => checkOpsSettings({ ...settings, token: 'secret-token' })).not.toThrow();
    expect(() => checkOpsSettings({ ...settings, allowUnauthenticated: true })).not.toThrow();
    expect(() => checkOpsSettings({ ...settings, host: '127.0.0.1' })).not.toThrow();
    expect(() => checkOpsSettings({ ...settings, port: undefined })).not.toThrow();
  });

  it('knows loopback hosts', () => {
    for (const host of ['127.0.0.1', '127.3.2.1', 'localhost', '::1', '[::1]', '::ffff:127.0.0.1']) expect(isLoopbackHost(host)).toBe(true);
    for (const host of ['0.0.0.0', '::', '10.0.0.4', 'metrics.internal', '128.0.0.1']) expect(isLoopbackHost(host)).toBe(false);
  });
});

describe('telemetry.metrics config', () => {
  it('reads every key from its variable, and the token is redacted like every configured secret', () => {
    const env = { RATCHET_TELEMETRY_METRICS_PORT: '9464', RATCHET_TELEMETRY_METRICS_HOST: '0.0.0.0', RATCHET_TELEMETRY_METRICS_TOKEN: 'scrape-token-value', RATCHET_TELEMETRY_METRICS_ALLOW_UNAUTHENTICATED: 'false' };
    const config = loadConfig({ schema: baseConfigSchema, configDir: __dirname, env });
    expect(config.telemetry.metrics).toEqual({ port: 9464, host: '0.0.0.0', token: 'scrape-token-value', allowUnauthenticated: false });
    expect(configuredSecrets(config, {})).toContain('scrape-token-value');
    expect(configuredSecrets({}, env)).toContain('scrape-token-value');
  });

  it('has no server by default, and binds loopback', () => {
    expect(loadConfig({ schema: baseConfigSchema, configDir: __dirname, env: {} }).telemetry.metrics).toEqual({ host: '127.0.0.1', allowUnauthenticated: false });
  });
});
