import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { configuredSecrets, createRedactor, loadRedactionRules, redactStrings, type Redactor } from '@ratchet/redaction';
import { baseConfigSchema, loadConfig, type BaseConfig } from '@ratchet/config';
import { AppError, ErrorCode } from '@ratchet/errors';
import { HealthStatus } from '@ratchet/contracts';
import { createLogger, processMetrics } from '@ratchet/telemetry';
import type { NatsTransport } from '@ratchet/bus';
import type { z } from 'zod';
import type { DependencyCheck } from './health';
import type { HealthServiceDefinition, RunningService, ServiceSpec } from './service-host';
import { connectWithRetry, hostService, natsConnectionOf } from './service-host';
import { checkOpsSettings, startOpsServer, type OpsServer } from './ops-server';

/** What a service builds from its config once the bus is up. */
export interface StartedService<D extends HealthServiceDefinition> {
  readonly implementation?: ServiceSpec<D>['implementation'];
  readonly checks?: readonly DependencyCheck[];
  /** This replica's own subject token, when some calls must reach this very process (see ServiceSpec.instance). */
  readonly instance?: string;
  /** Releases what `start` opened (servers, workers, pools), after the bus stopped delivering calls. */
  close?(graceMs: number): Promise<void>;
}

export interface StartContext<C> {
  readonly config: C;
  /**
   * Removes secrets from text before it is stored or shown: the configured
   * ones by value (`configuredSecrets`), then config/redaction.yaml's rules.
   * Every log line of the process already passes through it.
   */
  readonly redact: (text: string) => string;
  readonly transport: NatsTransport;
  readonly logger: ReturnType<typeof createLogger>;
  /** Aborts when the process is asked to stop during start-up. */
  readonly signal: AbortSignal;
}

/** A service process: its bus spec, its config schema and how it builds itself. */
export interface ProcessSpec<D extends HealthServiceDefinition, S extends z.ZodType = typeof baseConfigSchema> extends Omit<ServiceSpec<D>, 'implementation' | 'checks'> {
  /** Default: the shared sections only. */
  readonly schema?: S;
  /** More YAML files merged after `<name>.yaml` when they exist in the config directory (e.g. models.yaml). */
  readonly optionalFiles?: readonly string[];
  /** Builds the implementation; a thrown CONFIG_INVALID exits 78, anything else 1. Default: Health only. */
  readonly start?: (context: StartContext<z.infer<S>>) => Promise<StartedService<D>>;
  /**
   * Redacts every reply and error before it leaves the process (file
   * contents, ids and commands to approve excepted; see `redactStrings`).
   * For the roles that call a model: they alone hold its key, so a provider
   * that echoes it must be caught here, not by the services that store it.
   */
  readonly redactReplies?: boolean;
}

/** Exit code for a bad configuration (sysexits EX_CONFIG), so supervisors can tell it from a crash. */
export const EXIT_CONFIG = 78;

/** Reads `version` from the package.json in `packageDir`. */
export function packageVersion(packageDir: string): string {
  const manifest = JSON.parse(readFileSync(path.join(packageDir, 'package.json'), 'utf8')) as { version?: string };
  return manifest.version ?? '0.0.0';
}

/**
 * The whole life of a service process, for its `main.ts`: parse config once,
 * start the operations HTTP server when `telemetry.metrics.port` is set
 * (`/metrics`, `/livez`, `/readyz`; see `startOpsServer`), connect to NATS
 * (retrying until it answers), serve, and on SIGTERM or SIGINT stop taking
 * calls, finish or hand back the ones in flight within `shutdown.graceMs`,
 * close the connection and exit 0. A bad config (a metrics port in use
 * included) exits 78 with every problem listed.
 */
export async function runService<D extends HealthServiceDefinition, S extends z.ZodType = typeof baseConfigSchema>(spec: ProcessSpec<D, S>): Promise<void> {
  let config: z.infer<S> & { readonly bus: BaseConfig['bus']; readonly telemetry: BaseConfig['telemetry']; readonly log: BaseConfig['log']; readonly shutdown: BaseConfig['shutdown'] };
  let redactor: Redactor;
  try {
    const configDir = process.env['RATCHET_CONFIG_DIR'] || path.resolve('config');
    const files = (spec.optionalFiles ?? []).filter((file) => existsSync(path.join(configDir, file)));
    config = loadConfig({ service: spec.name, schema: spec.schema ?? baseConfigSchema, files }) as typeof config;
    // Checked at start: a bad redaction.yaml stops the service rather than let secrets through.
    redactor = createRedactor(loadRedactionRules(configDir), { values: configuredSecrets(config) });
    checkOpsSettings(config.telemetry.metrics);
  } catch (error) {
    const appError = AppError.from(error);
    process.stderr.write(`${spec.name}: ${appError.code === ErrorCode.CONFIG_INVALID ? '' : 'cannot load config: '}${appError.message}\n`);
    process.exitCode = EXIT_CONFIG;
    return;
  }
  const redact = (text: string) => redactor.redact(text).text;
  const logger = createLogger({ service: spec.name, level: config.log.level, redact });
  if (config.bus.transport !== 'nats') {
    logger.error({ transport: config.bus.transport }, 'a service process needs NATS: set RATCHET_BUS_TRANSPORT=nats (the in-process transport is for embedded mode)');
    process.exitCode = EXIT_CONFIG;
    return;
  }

  const metrics = processMetrics();
  metrics.serviceInfo.set({ service_name: spec.name, version: spec.version }, 1);
  const stopping = new AbortController();
  // Filled in as start-up proceeds; a signal may arrive at any point of it.
  const state: { running?: RunningService; transport?: NatsTransport; started?: StartedService<D>; ops?: OpsServer } = {};
  const { port: opsPort, host: opsHost, token: opsToken } = config.telemetry.metrics;
  if (opsPort !== undefined) {
    metrics.collectProcessMetrics();
    try {
      // Up before NATS: liveness holds while the bus is awaited, readiness says NOT_SERVING until the service serves.
      state.ops = await startOpsServer({
        port: opsPort,
        host: opsHost,
        token: opsToken,
        registry: metrics.registry,
        health: async () => (state.running === undefined ? HealthStatus.HEALTH_STATUS_NOT_SERVING : (await state.running.health()).status),
        logger,
      });
    } catch (error) {
      const appError = AppError.from(error);
      logger.error({ code: appError.code, err: appError.message }, 'cannot start the operations server');
      process.exitCode = appError.code === ErrorCode.CONFIG_INVALID ? EXIT_CONFIG : 1;
      return;
    }
    logger.info({ host: opsHost, port: state.ops.port, token: opsToken !== undefined }, 'serving /metrics, /livez and /readyz');
  }
  /** Closes the operations server, last: on the way out of a start that failed, or at the end of a shutdown. */
  const closeOps = () => state.ops?.close() ?? Promise.resolve();
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
    await state.started?.close?.(config.shutdown.graceMs).catch((error: unknown) => logger.error({ err: AppError.from(error).message }, 'closing the service failed'));
    await state.transport?.close();
    await closeOps();
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
        connection: natsConnectionOf(config.bus, spec.name),
        onAttemptFailed: (error, attempt, retryInMs) => logger.warn({ attempt, retryInMs, err: error.message }, 'NATS not reachable yet'),
      },
      stopping.signal,
    );
  } catch (error) {
    if (stopping.signal.aborted) return;
    await closeOps();
    const appError = AppError.from(error);
    if (appError.code === ErrorCode.CONFIG_INVALID || appError.code === ErrorCode.UNAUTHENTICATED) {
      // Nothing a restart fixes: say what to set and exit as a bad config does.
      logger.error({ code: appError.code, err: appError.message }, 'cannot connect to NATS');
      process.exitCode = EXIT_CONFIG;
      return;
    }
    throw error;
  }
  state.transport = transport;
  if (stopping.signal.aborted) {
    await transport.close();
    return;
  }
  let started: StartedService<D> = {};
  if (spec.start !== undefined) {
    // Opening stores can take seconds (an embedded database's first start); say so.
    logger.info({}, 'connected to NATS; opening what the service needs');
    try {
      started = await spec.start({ config, redact, transport, logger, signal: stopping.signal });
    } catch (error) {
      const appError = AppError.from(error);
      logger.error({ code: appError.code, err: appError.message }, 'cannot start');
      await transport.close();
      await closeOps();
      process.exitCode = appError.code === ErrorCode.CONFIG_INVALID ? EXIT_CONFIG : 1;
      return;
    }
  }
  state.started = started;
  if (stopping.signal.aborted) {
    await started.close?.(0);
    await transport.close();
    return;
  }
  const implementation = started.implementation === undefined || spec.redactReplies !== true ? started.implementation : redactedReplies(started.implementation, redact);
  state.running = hostService(
    { name: spec.name, version: spec.version, definition: spec.definition, ...(implementation === undefined ? {} : { implementation }), ...(started.checks === undefined ? {} : { checks: started.checks }), ...(started.instance === undefined ? {} : { instance: started.instance }) },
    { transport, logger },
  );
  await state.running.server.ready;
  logger.info({ natsUrl: config.bus.natsUrl, pid: process.pid }, 'ready');
}

/** `runService` for a `main.ts`: an unexpected failure is logged and exits 1. */
export function main<D extends HealthServiceDefinition, S extends z.ZodType = typeof baseConfigSchema>(spec: ProcessSpec<D, S>): void {
  runService(spec).catch((error: unknown) => {
    process.stderr.write(`${spec.name}: fatal: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exitCode = 1;
  });
}

/**
 * `implementation` with every reply passed through `redactStrings` and every
 * error's message through `redact`. Streams are left as they are (the
 * model roles serve none).
 */
function redactedReplies<I extends object>(implementation: I, redact: (text: string) => string): I {
  const wrapped: Record<string, unknown> = {};
  for (const [name, method] of Object.entries(implementation)) {
    if (typeof method !== 'function') {
      wrapped[name] = method;
      continue;
    }
    wrapped[name] = async (...args: unknown[]) => {
      try {
        const reply: unknown = await (method as (...parameters: unknown[]) => unknown).apply(implementation, args);
        if (typeof reply === 'object' && reply !== null && Symbol.asyncIterator in reply) return reply;
        return redactStrings(reply, redact);
      } catch (error) {
        const appError = AppError.from(error);
        const message = redact(appError.message);
        throw message === appError.message ? appError : new AppError(appError.code, message, { retryable: appError.isRetryable });
      }
    };
  }
  return wrapped as I;
}
