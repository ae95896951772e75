import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { configSection, extendConfigSchema, loadConfig, type DeepReadonly } from '@ratchet/config';
import { modelConfigSection, pricesConfigSection } from '@ratchet/llm';
import { z } from 'zod';

/** Everything embedded mode reads: the shared sections plus models, loop defaults, sandbox and storage. */
export const cliConfigSchema = extendConfigSchema({
  model: modelConfigSection,
  prices: pricesConfigSection,
  orchestrator: configSection({
    /** Iterations per task when the task sets none. */
    maxIterations: z.number().int().min(1).max(100).default(10),
    /** Tokens per task; 0 = no limit. */
    maxTokens: z.number().int().nonnegative().default(0),
    /** USD per task; 0 = no limit. */
    maxCostUsd: z.number().nonnegative().default(0),
    /** Wall time per task, seconds; 0 = no limit. */
    maxWallTimeSeconds: z.number().int().nonnegative().default(1800),
    /** Deadline of one model call (plan, code, tests, reflection), ms. */
    modelCallTimeoutMs: z.number().int().positive().default(300_000),
    /** Re-plans allowed before no progress ends a task. */
    maxReplans: z.number().int().nonnegative().default(2),
    lessonLimit: z.number().int().min(1).max(50).default(5),
    lessonMinScore: z.number().min(0).max(1).default(0.2),
  }),
  sandbox: configSection({
    /** The image deploy/sandbox/build-image.sh builds. */
    image: z.string().min(1).default('ratchet-sandbox:1'),
    /** Docker engine socket. */
    dockerSocket: z.string().min(1).default('/var/run/docker.sock'),
    timeoutSeconds: z.number().int().min(1).max(3600).default(120),
    memoryMb: z.number().int().min(32).default(512),
    pids: z.number().int().min(8).default(128),
    cpus: z.number().positive().default(1),
    outputLimitKb: z.number().int().min(1).default(256),
    workDirMb: z.number().int().min(1).default(64),
  }),
  storage: configSection({
    /** Where embedded mode keeps its database (PGlite). Default ~/.ratchet/data. */
    dataDir: z.string().min(1).optional(),
  }),
});

export type CliConfig = DeepReadonly<z.infer<typeof cliConfigSchema>>;

/**
 * The config directory: RATCHET_CONFIG_DIR, else `config/` in the working
 * directory when it has prompts.yaml, else the defaults shipped with Ratchet.
 */
export function configDirectory(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env['RATCHET_CONFIG_DIR'];
  if (fromEnv !== undefined && fromEnv !== '') return path.resolve(fromEnv);
  const local = path.resolve('config');
  if (existsSync(path.join(local, 'prompts.yaml'))) return local;
  return path.resolve(__dirname, '..', '..', '..', 'config');
}

/**
 * Loads ratchet.yaml, cli.yaml and models.yaml from `configDir`, then
 * RATCHET_* variables. Embedded mode always uses the in-process bus.
 *
 * @throws AppError CONFIG_INVALID listing every bad key and the variable that fixes it.
 */
export function loadCliConfig(configDir: string, env: NodeJS.ProcessEnv = process.env): CliConfig {
  const files = existsSync(path.join(configDir, 'models.yaml')) ? ['models.yaml'] : [];
  return loadConfig({ schema: cliConfigSchema, service: 'cli', configDir, files, env: { ...env, RATCHET_BUS_TRANSPORT: 'inprocess' } });
}

/** The data directory: storage.dataDir, else ~/.ratchet/data. */
export function dataDirectory(config: CliConfig): string {
  return path.resolve(config.storage.dataDir ?? path.join(os.homedir(), '.ratchet', 'data'));
}
