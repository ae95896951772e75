import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { configSection, extendConfigSchema, loadConfig, type DeepReadonly } from '@ratchet/config';
import { auditorConfigSection, coderConfigSection, plannerConfigSection, reflectorConfigSection, reprompterConfigSection, reviewerConfigSection, sandboxConfigSection, testerConfigSection } from '@ratchet/agent';
import { orchestratorConfigSection } from '@ratchet/orchestrator/settings';
import { modelConfigSection, pricesConfigSection } from '@ratchet/llm';
import { embedderConfigSection, learningConfigSection } from '@ratchet/memory/settings';
import { z } from 'zod';
import { workspaceConfigSection } from './workspace/settings';

/** Everything embedded mode reads: the shared sections plus models, loop defaults, sandbox, the lesson embedder, storage and what a workspace sends. */
export const cliConfigSchema = extendConfigSchema({
  model: modelConfigSection,
  prices: pricesConfigSection,
  orchestrator: orchestratorConfigSection,
  sandbox: sandboxConfigSection,
  coder: coderConfigSection,
  // Every other role's prompt budget, as each service process reads it from its own file (config/planner.yaml, tester.yaml, reflector.yaml).
  planner: plannerConfigSection,
  reprompter: reprompterConfigSection,
  tester: testerConfigSection,
  reflector: reflectorConfigSection,
  reviewer: reviewerConfigSection,
  auditor: auditorConfigSection,
  embedder: embedderConfigSection,
  learning: learningConfigSection,
  storage: configSection({
    /** Where embedded mode keeps its database (PGlite). Default ~/.ratchet/data. */
    dataDir: z.string().min(1).optional(),
  }),
  workspace: workspaceConfigSection,
  /**
   * `ratchet ui`: a link per task to its trace, an http(s) URL with {taskId}
   * and/or {traceId} (RATCHET_WEB_TRACE_URL_TEMPLATE); names beyond loopback
   * the browser may address it by (RATCHET_WEB_ALLOWED_HOSTS). The
   * dashboard checks both at start.
   */
  web: configSection({ traceUrlTemplate: z.string().min(1).optional(), allowedHosts: z.array(z.string().min(1)).default([]) }),
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
export function dataDirectory(config: CliConfig | undefined): string {
  return path.resolve(config?.storage.dataDir ?? path.join(os.homedir(), '.ratchet', 'data'));
}
