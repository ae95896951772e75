import path from 'node:path';
import { loadConfig } from '@ratchet/config';
import { HealthStatus } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { grpcHealth } from '@ratchet/grpc-api';
import { checkOpsSettings, EXIT_CONFIG, isLoopbackHost, packageVersion, startOpsServer, type OpsServer } from '@ratchet/runtime';
import { createLogger, processMetrics } from '@ratchet/telemetry';
import { grpcOrchestrator } from './adapters/grpc-orchestrator';
import { webConfigSchema, type WebConfig } from './config';
import { loopbackHostNames } from './domain/request-source';
import { createGateway, type Gateway } from './gateway';

const name = 'web';

/** `host:port` split at its last colon (an IPv6 host keeps its own). */
function hostAndPort(address: string): { host: string; port: number } {
  const colon = address.lastIndexOf(':');
  return { host: address.slice(0, colon).replace(/^\[|\]$/g, ''), port: Number(address.slice(colon + 1)) };
}

/**
 * The checks config validation cannot make alone.
 *
 * @throws AppError CONFIG_INVALID naming the variables to set.
 */
function checkWebSettings(config: WebConfig): void {
  const { web } = config;
  if ((web.certFile === undefined) !== (web.keyFile === undefined)) throw new AppError(ErrorCode.CONFIG_INVALID, 'HTTPS needs both web.certFile and web.keyFile (RATCHET_WEB_CERT_FILE, RATCHET_WEB_KEY_FILE)');
  if (web.certFile === undefined && !web.allowPlaintext && !isLoopbackHost(hostAndPort(web.address).host)) {
    throw new AppError(
      ErrorCode.CONFIG_INVALID,
      `web.address ${web.address} is reachable from other hosts over plain HTTP, and browsers send their tokens to it: set RATCHET_WEB_CERT_FILE and RATCHET_WEB_KEY_FILE (HTTPS), or RATCHET_WEB_ALLOW_PLAINTEXT=true when TLS ends in front of it (an ingress) or its port is published on loopback only, or listen on 127.0.0.1`,
    );
  }
  checkOpsSettings(config.telemetry.metrics);
}

// The dashboard as its own process: the built app and its JSON gateway, a gRPC client of the orchestrator.
async function run(): Promise<void> {
  let config: WebConfig;
  try {
    config = loadConfig({ service: name, schema: webConfigSchema }) as WebConfig;
    checkWebSettings(config);
  } catch (error) {
    const appError = AppError.from(error);
    process.stderr.write(`${name}: ${appError.code === ErrorCode.CONFIG_INVALID ? '' : 'cannot load config: '}${appError.message}\n`);
    process.exitCode = EXIT_CONFIG;
    return;
  }
  const logger = createLogger({ service: name, level: config.log.level });
  const { web } = config;
  const metrics = processMetrics();
  metrics.serviceInfo.set({ service_name: name, version: packageVersion(path.join(__dirname, '..')) }, 1);
  const tls = web.orchestratorCaFile !== undefined ? { caFile: web.orchestratorCaFile } : web.orchestratorTls ? {} : undefined;
  let orchestrator: ReturnType<typeof grpcOrchestrator>;
  let gateway: Gateway;
  try {
    orchestrator = grpcOrchestrator(web.orchestratorAddress, tls === undefined ? {} : { tls });
    gateway = createGateway({
      orchestrator,
      logger,
      allowedHosts: web.allowedHosts,
      ...(web.traceUrlTemplate === undefined ? {} : { traceUrlTemplate: web.traceUrlTemplate }),
      ...(web.certFile === undefined || web.keyFile === undefined ? {} : { tls: { certFile: web.certFile, keyFile: web.keyFile } }),
    });
  } catch (error) {
    const appError = AppError.from(error);
    logger.error({ code: appError.code, err: appError.message }, 'cannot start');
    process.exitCode = appError.code === ErrorCode.CONFIG_INVALID ? EXIT_CONFIG : 1;
    return;
  }
  let ops: OpsServer | undefined;

  const { port: opsPort, host: opsHost, token: opsToken } = config.telemetry.metrics;
  try {
    if (opsPort !== undefined) {
      metrics.collectProcessMetrics();
      // Ready while it serves: without the orchestrator it still answers every page, with the reason, so it is DEGRADED, not out of service.
      ops = await startOpsServer({
        port: opsPort,
        host: opsHost,
        token: opsToken,
        registry: metrics.registry,
        health: async () => ((await grpcHealth(web.orchestratorAddress, { ...(tls === undefined ? {} : { tls }), timeoutMs: 2_000 }).catch(() => 'UNREACHABLE')) === 'SERVING' ? HealthStatus.HEALTH_STATUS_SERVING : HealthStatus.HEALTH_STATUS_DEGRADED),
        logger,
      });
    }
    const { host, port } = hostAndPort(web.address);
    const bound = await gateway.listen(host, port);
    logger.info({ address: `${host}:${bound}`, https: web.certFile !== undefined, orchestrator: web.orchestratorAddress, orchestratorTls: tls !== undefined, traceLinks: web.traceUrlTemplate !== undefined, allowedHosts: [...loopbackHostNames, ...web.allowedHosts] }, 'ready');
  } catch (error) {
    const appError = AppError.from(error);
    logger.error({ code: appError.code, err: appError.message }, 'cannot start');
    await gateway.close();
    await ops?.close();
    orchestrator.close();
    process.exitCode = appError.code === ErrorCode.CONFIG_INVALID ? EXIT_CONFIG : 1;
    return;
  }

  let stopping = false;
  const shutdown = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    setTimeout(() => {
      logger.error({ graceMs: config.shutdown.graceMs }, 'shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdown.graceMs + 5_000).unref();
    await gateway.close();
    orchestrator.close();
    await ops?.close();
    logger.info({}, 'stopped');
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));
}

run().catch((error: unknown) => {
  process.stderr.write(`${name}: fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exitCode = 1;
});
