import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { busRoles, createClient, inboxPrefixOf, natsAuthorizationConfig, NatsTransport, type BusRoleName } from '@ratchet/bus';
import { SANDBOX_JOB_QUEUE, SANDBOX_JOB_QUEUE_DEFAULTS } from '@ratchet/agent';
import { HealthStatus } from '@ratchet/contracts';
import { freePort, startNatsServer, startNodeProcess, startPostgres } from '@ratchet/testing';
import type { NatsServerFixture, PostgresFixture } from '@ratchet/testing';
import { EXIT_CONFIG, packageVersion } from './run-service';
import type { HealthServiceDefinition } from './service-host';

export interface ServiceProcessSpec {
  readonly name: string;
  /** The service's package folder; its `dist/main.js` must be built. */
  readonly packageDir: string;
  readonly definition: HealthServiceDefinition;
  /** More environment for the process (a model endpoint for role services, ...). */
  readonly env?: Readonly<Record<string, string>>;
  /** Starts a real Postgres and passes it as RATCHET_DATABASE_URL (orchestrator, memory). */
  readonly postgres?: boolean;
  /** Dependencies Health reports besides the bus, by name. Default none. */
  readonly dependencies?: readonly string[];
}

/**
 * The behaviour every service process shares, tested on the real thing: the
 * built `main.js` as a child process with OpenTelemetry preloaded, against a
 * real nats-server. Call it at the top level of a service's spec file.
 */
export function serviceProcessContract(spec: ServiceProcessSpec): void {
  const repoRoot = path.resolve(spec.packageDir, '../..');
  if (!(spec.name in busRoles)) throw new Error(`${spec.name} has no NATS role in @ratchet/bus busRoles`);
  // NATS with authorization, as deployed: the service as its own role, health asked by the probe.
  const role = spec.name as BusRoleName;
  // A leading letter: nats-server would read a value starting with a digit as a number.
  const password = () => `p${randomBytes(16).toString('hex')}`;
  const passwords = { service: password(), probe: password(), orchestrator: password() };
  const natsUser = { RATCHET_BUS_NATS_USER: role, RATCHET_BUS_NATS_PASSWORD: passwords.service };
  const start = (env: Record<string, string | undefined>) =>
    startNodeProcess({
      script: path.join(spec.packageDir, 'dist', 'main.js'),
      nodeArgs: ['--require', '@ratchet/telemetry/register'],
      cwd: repoRoot,
      env: { RATCHET_CONFIG_DIR: path.join(repoRoot, 'config'), RATCHET_LOG_LEVEL: 'info', ...spec.env, ...(postgres === undefined ? {} : { RATCHET_DATABASE_URL: postgres.connectionString }), ...env },
    });

  let postgres: PostgresFixture | undefined;
  describe(`${spec.name} process`, () => {
    let nats: NatsServerFixture;
    beforeAll(async () => {
      const authorization = natsAuthorizationConfig([
        { role, user: role, password: passwords.service },
        { role: 'probe', user: 'probe', password: passwords.probe },
        ...(role === 'orchestrator' ? [] : [{ role: 'orchestrator' as const, user: 'orchestrator', password: passwords.orchestrator }]),
      ]);
      [nats, postgres] = await Promise.all([startNatsServer({ config: authorization }), spec.postgres === true ? startPostgres() : Promise.resolve(undefined)]);
      if (role !== 'orchestrator') {
        // What the orchestrator does when a deployment starts: only it may create the streams and queues the others use.
        const orchestrator = await NatsTransport.connect({ url: nats.url, name: 'provisioner', credentials: { user: 'orchestrator', password: passwords.orchestrator }, inboxPrefix: inboxPrefixOf('orchestrator') });
        await orchestrator.provision({ [SANDBOX_JOB_QUEUE]: SANDBOX_JOB_QUEUE_DEFAULTS }).finally(() => orchestrator.close());
      }
    }, 60_000);
    afterAll(async () => {
      await nats?.stop();
      await postgres?.stop();
    });

    it('serves Health on the bus and exits 0 on SIGTERM', async () => {
      const service = await start({ RATCHET_BUS_NATS_URL: nats.url, ...natsUser });
      try {
        // A liveness bound, not a speed target: an embedded store's first start
        // (PGlite's initdb for memory) takes several seconds on a loaded CI host.
        await service.waitForLine(/"msg":"ready"/, 40_000);
        const transport = await NatsTransport.connect({ url: nats.url, name: 'health-probe', credentials: { user: 'probe', password: passwords.probe }, inboxPrefix: inboxPrefixOf('probe') });
        try {
          const { name, fullName, methods } = spec.definition;
          const health = await createClient(transport, { name, fullName, methods: { health: methods.health } }).health({}, { timeoutMs: 5_000 });
          expect(health).toEqual(
            expect.objectContaining({
              service: spec.name,
              version: packageVersion(spec.packageDir),
              status: HealthStatus.HEALTH_STATUS_SERVING,
              dependencies: [
                { name: 'bus:nats', status: HealthStatus.HEALTH_STATUS_SERVING, detail: 'connected' },
                ...(spec.dependencies ?? []).map((name) => expect.objectContaining({ name, status: HealthStatus.HEALTH_STATUS_SERVING })),
              ],
            }),
          );
        } finally {
          await transport.close();
        }
        const exit = await service.terminate('SIGTERM', 10_000);
        expect(exit).toEqual({ code: 0, signal: null });
        expect(service.output()).toMatch(/"msg":"stopped"/);
      } finally {
        await service.kill();
      }
    }, 60_000);

    it('serves /livez, /readyz and /metrics (with its bearer token) when telemetry.metrics.port is set; a port in use stops a second one as a bad config', async () => {
      const port = await freePort();
      const token = `t${randomBytes(12).toString('hex')}`;
      const metricsEnv = { RATCHET_TELEMETRY_METRICS_PORT: String(port), RATCHET_TELEMETRY_METRICS_TOKEN: token };
      const service = await start({ RATCHET_BUS_NATS_URL: nats.url, ...natsUser, ...metricsEnv });
      try {
        await service.waitForLine(/"msg":"ready"/, 40_000);
        const base = `http://127.0.0.1:${port}`;
        expect((await fetch(`${base}/livez`)).status).toBe(200);
        const ready = await fetch(`${base}/readyz`);
        expect({ status: ready.status, body: await ready.text() }).toEqual({ status: 200, body: 'SERVING\n' });
        expect((await fetch(`${base}/metrics`)).status).toBe(401);
        const scraped = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${token}` } });
        expect(scraped.status).toBe(200);
        const text = await scraped.text();
        expect(text).toContain(`ratchet_service_info{service_name="${spec.name}",version="${packageVersion(spec.packageDir)}"} 1`);
        expect(text).toContain('ratchet_process_resident_memory_bytes');
        // The token is a configured secret: no log line shows it.
        expect(service.output()).not.toContain(token);

        const second = await start({ RATCHET_BUS_NATS_URL: nats.url, ...natsUser, ...metricsEnv });
        expect((await second.exited).code).toBe(EXIT_CONFIG);
        expect(second.output()).toMatch(new RegExp(`telemetry\\.metrics\\.port ${port} .*already in use: set RATCHET_TELEMETRY_METRICS_PORT`));

        const exit = await service.terminate('SIGTERM', 10_000);
        expect(exit).toEqual({ code: 0, signal: null });
        await expect(fetch(`${base}/livez`)).rejects.toThrow();
      } finally {
        await service.kill();
      }
    }, 60_000);

    it('refuses a bad config at start, naming the key and the variable to fix', async () => {
      const service = await start({ RATCHET_BUS_NATS_URL: nats.url, RATCHET_BUS_MAX_ATTEMPTS: 'lots' });
      const exit = await service.exited;
      expect(exit.code).toBe(EXIT_CONFIG);
      expect(service.output()).toMatch(/bus\.maxAttempts/);
      expect(service.output()).toMatch(/RATCHET_BUS_MAX_ATTEMPTS/);
    }, 30_000);

    it('refuses to serve metrics beyond loopback without a token', async () => {
      const service = await start({ RATCHET_BUS_NATS_URL: nats.url, ...natsUser, RATCHET_TELEMETRY_METRICS_PORT: String(await freePort()), RATCHET_TELEMETRY_METRICS_HOST: '0.0.0.0' });
      expect((await service.exited).code).toBe(EXIT_CONFIG);
      expect(service.output()).toMatch(/set RATCHET_TELEMETRY_METRICS_TOKEN/);
    }, 30_000);

    it('exits as with a bad config when NATS refuses its credentials, saying what to set and not the password', async () => {
      const service = await start({ RATCHET_BUS_NATS_URL: nats.url, RATCHET_BUS_NATS_USER: role, RATCHET_BUS_NATS_PASSWORD: 'not-the-password' });
      const exit = await service.exited;
      expect(exit.code).toBe(EXIT_CONFIG);
      expect(service.output()).toMatch(/refused these credentials: set RATCHET_BUS_NATS_USER and RATCHET_BUS_NATS_PASSWORD/);
      expect(service.output()).not.toContain('not-the-password');
    }, 30_000);

    it('waits for NATS when it is not up, and still stops cleanly', async () => {
      const service = await start({ RATCHET_BUS_NATS_URL: `nats://127.0.0.1:${await freePort()}` });
      try {
        await service.waitForLine(/NATS not reachable yet/);
        const exit = await service.terminate('SIGTERM', 10_000);
        expect(exit).toEqual({ code: 0, signal: null });
      } finally {
        await service.kill();
      }
    }, 30_000);
  });
}
