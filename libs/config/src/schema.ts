import { z } from 'zod';

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
    })
    .strict()
    .prefault({}),
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
