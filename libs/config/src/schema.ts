import { z } from 'zod';

/**
 * Tracing and metrics settings. The tracing keys are read by the
 * `@ratchet/telemetry/register` preload, before the service itself parses its
 * config; the standard `OTEL_*` variables take precedence over them. The
 * `metrics` section is read by the service host (`@ratchet/runtime`).
 */
export const telemetryConfigSchema = z
  .object({
    /** `none` keeps trace ids for logs and headers but exports nothing. */
    tracesExporter: z.enum(['none', 'otlp', 'console']).default('none'),
    /** Base URL of the OTLP collector, e.g. `http://otel-collector:4318`. */
    otlpEndpoint: z.httpUrl().optional(),
    /** `service.namespace` resource attribute, groups Ratchet's services in Tempo and Grafana. */
    serviceNamespace: z.string().min(1).default('ratchet'),
    /**
     * The operations HTTP server every service process runs: `GET /metrics`
     * (Prometheus), `GET /livez`, `GET /readyz`. Off unless `port` is set.
     */
    metrics: z
      .object({
        /** TCP port of the server (containers use 9464); unset = no server. */
        port: z.number().int().min(1).max(65_535).optional(),
        /** Interface to bind. Loopback by default; `0.0.0.0` in containers, where Prometheus scrapes from outside. */
        host: z.string().min(1).default('127.0.0.1'),
        /** Bearer token `/metrics` requires (`Authorization: Bearer <token>`); the probes need none. */
        token: z.string().min(1).optional(),
        /** Serve `/metrics` on a non-loopback host without a token (a network where every client is trusted). */
        allowUnauthenticated: z.boolean().default(false),
      })
      .strict()
      .prefault({}),
  })
  .strict()
  .prefault({});

/**
 * Settings every Ratchet process shares. Every key has a default, so an empty
 * config works for local development. Sections use `prefault` so their inner
 * defaults apply when the section is missing.
 */
export const baseConfigSchema = z.object({
  bus: z
    .object({
      /** `nats` for service processes; `inprocess` only inside the embedded CLI. */
      transport: z.enum(['nats', 'inprocess']).default('nats'),
      /** One URL, or several comma-separated for a cluster. */
      natsUrl: z.string().min(1).default('nats://127.0.0.1:4222'),
      /** Deadline of an RPC when the caller sets none, ms. */
      requestTimeoutMs: z.number().int().positive().default(5_000),
      /** Attempts per RPC including the first; only retryable errors are retried. */
      maxAttempts: z.number().int().min(1).max(10).default(3),
      /** First retry delay, ms, doubled per attempt with jitter. */
      retryBackoffMs: z.number().int().nonnegative().default(100),
      /** Prefix of NATS connection names, so `nats-server` monitoring shows which deployment a client belongs to. */
      name: z.string().min(1).optional(),
      /** NATS user of this service (with `natsPassword`); the server's authorization gives it its role's permissions (deploy/SECURITY.md). */
      natsUser: z.string().min(1).optional(),
      natsPassword: z.string().min(1).optional(),
      /** A `.creds` file (JWT and NKey seed) instead of a user and password. */
      natsCredsFile: z.string().min(1).optional(),
      /** A file holding an NKey user seed (`SU...`) instead of a user and password. */
      natsNkeySeedFile: z.string().min(1).optional(),
      /** TLS to NATS: the CA of the server's certificate; a client certificate and key when the server verifies clients. */
      natsTlsCaFile: z.string().min(1).optional(),
      natsTlsCertFile: z.string().min(1).optional(),
      natsTlsKeyFile: z.string().min(1).optional(),
    })
    .strict()
    .prefault({}),
  telemetry: telemetryConfigSchema,
  log: z
    .object({
      level: z.enum(['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']).default('info'),
    })
    .strict()
    .prefault({}),
  shutdown: z
    .object({
      /** How long in-flight work may take after SIGTERM before it is handed back, ms. */
      graceMs: z.number().int().nonnegative().default(10_000),
    })
    .strict()
    .prefault({}),
});

export type BaseConfig = z.infer<typeof baseConfigSchema>;
export type TelemetryConfig = z.infer<typeof telemetryConfigSchema>;

/**
 * A config section that may be left out entirely: its keys' own defaults
 * apply, which a plain `z.object` would not do (a missing object is an error
 * there). Keys without a default stay required and are reported when unset.
 * Unknown keys are rejected, so a typo does not silently fall back to a default.
 */
export function configSection<T extends z.ZodRawShape>(shape: T): z.ZodPrefault<z.ZodObject<T, z.core.$strict>> {
  const section = z.object(shape).strict();
  // `{}` is a valid input whenever every key has a default; when some do not,
  // zod reports exactly those keys, which is the error we want.
  return section.prefault({} as z.input<typeof section>);
}

/**
 * `baseConfigSchema` plus a service's own sections, for `loadConfig`:
 * `extendConfigSchema({ planner: configSection({ maxSteps: z.number().default(8) }) })`.
 * Same as `baseConfigSchema.extend(sections)`; a section named like a shared
 * one replaces it.
 */
export function extendConfigSchema<T extends z.ZodRawShape>(sections: T) {
  return baseConfigSchema.extend(sections);
}
