import { readFileSync } from 'node:fs';
import path from 'node:path';
import { baseConfigSchema, loadConfig } from '@ratchet/config';
import { AppError, ErrorCode } from '@ratchet/errors';
import { createLogger } from '@ratchet/telemetry';
import type { NatsTransport } from '@ratchet/bus';
import type { HealthServiceDefinition, RunningService, ServiceSpec } from './service-host';
import { connectWithRetry, hostService } from './service-host';

/** Exit code for a bad configuration (sysexits EX_CONFIG), so supervisors can tell it from a crash. */
export const EXIT_CONFIG = 78;

/** Reads `version` from the package.json in `packageDir`. */
export function packageVersion(packageDir: string): string {
  const manifest = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as { version?: string };
  return manifest.version ?? '0.0.0';
}

/**
 * The whole life of a service process, for its `main.ts`: parse config once,
 * connect to NATS (retrying until it answers), serve, and on SIGTERM or
 * SIGINT stop taking calls, finish or hand back the ones in flight within
 * `shutdown.graceMs`, close the connection and exit 0. A bad config exits 78
 * with every problem listed.
 */
export async function runService<D extends HealthServiceDefinition>(spec: ServiceSpec<D>): Promise<void> {
  let config;
  try {
    config = loadConfig({ service: spec.name, schema: baseConfigSchema });
  } catch (error) {
    const appError = AppError.from(error);
    process.stderr.write(`${spec.name}: ${appError.code === ErrorCode.CONFIG_INVALID ? '' : 'cannot load config: '}${appError.message}\n`);
    process.exitCode = EXIT_CONFIG;
    return;
  }
  const logger = createLogger({ service: spec.name, level: config.log.level });
  if (config.bus.transport !== 'nats') {
    logger.error({ transport: config.bus.transport }, 'a service process needs NATS: set RATCHET_BUS_TRANSPORT=nats (the in-process transport is for embedded mode)');
    process.exitCode = EXIT_CONFIG;
    return;
  }

  const stopping = new AbortController();
  // Filled in as start-up proceeds; a signal may arrive at any point of it.
  const state: { running?: RunningService; transport?: NatsTransport } = {};
  const shutdown = async (signal: string) => {
    if (stopping.signal.aborted) return;
    stopping.abort();
    logger.info({ signal, inFlight: state.running?.server.inFlight ?? 0 }, 'shutting down');
    // Whatever happens, do not outlive the grace period by much.
    setTimeout(() => {
      logger.error({ graceMs: config.shutdown.graceMs }, 'shutdown took too long; exiting');
      process.exit(1);
    }, config.shutdown.graceMs + 5_000).unref();
    await state.running?.stop(config.shutdown.graceMs);
    await state.transport?.close();
    logger.info({}, 'stopped');
  };
  process.once('SIGTERM', () => void shutdown('SIGTERM'));
  process.once('SIGINT', () => void shutdown('SIGINT'));

  let transport: NatsTransport;
  try {
    transport = await connectWithRetry(
      {
        url: config.bus.natsUrl,
        name: config.bus.name ? `${config.bus.name}-${spec.name}` : spec.name,
        onAttemptFailed: (error, attempt, retryInMs) => logger.warn({ attempt, retryInMs, err: error.message }, 'NATS not reachable yet'),
      },
      stopping.signal,
    );
  } catch (error) {
    if (stopping.signal.aborted) return;
    throw error;
  }
  state.transport = transport;
  if (stopping.signal.aborted) {
    await transport.close();
    return;
  }
  state.running = hostService(spec, { transport, logger });
  await state.running.server.ready;
  logger.info({ natsUrl: config.bus.natsUrl, pid: process.pid }, 'ready');
}

/** `runService` for a `main.ts`: an unexpected failure is logged and exits 1. */
export function main<D extends HealthServiceDefinition>(spec: ServiceSpec<D>): void {
  runService(spec).catch((error: unknown) => {
    process.stderr.write(`${spec.name}: fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}
