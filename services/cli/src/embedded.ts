import path from 'node:path';
import { sandboxLimitsOf } from '@ratchet/agent';
import { loadDefinitionExtractor } from '@ratchet/code-intel';
import { loadPrompts } from '@ratchet/prompting';
import { configuredSecrets, createRedactor, loadRedactionRules } from '@ratchet/redaction';
import { createClient, InProcessTransport, type ServiceClient } from '@ratchet/bus';
import {
  CoderServiceDefinition,
  MemoryServiceDefinition,
  OrchestratorServiceDefinition,
  PlannerServiceDefinition,
  ReflectorServiceDefinition,
  SafetyServiceDefinition,
  SandboxRunnerServiceDefinition,
  TaskEvent,
  TesterServiceDefinition,
} from '@ratchet/contracts';
import { createCoderService } from '@ratchet/coder';
import { openPglite } from '@ratchet/db';
import { createRoleModels, type RoleModels } from '@ratchet/llm';
import { createEmbedder, createMemoryService, learningOptionsOf } from '@ratchet/memory';
import { agentClients, createOrchestratorService, loadProfiles, loopSettingsOf, type OrchestratorService } from '@ratchet/orchestrator';
import { createPlannerService } from '@ratchet/planner';
import { createReflectorService } from '@ratchet/reflector';
import { hostService, packageVersion, type RunningService } from '@ratchet/runtime';
import { createSafetyService, loadCodeCheck, loadCommandPolicy, loadDependencyPolicy } from '@ratchet/safety';
import { createSandboxRunnerService, sandboxRunnerOptionsOf } from '@ratchet/sandbox-runner';
import { createTesterService } from '@ratchet/tester';
import { createLogger } from '@ratchet/telemetry';
import type { CliConfig } from './cli-config';
import { terminalSafe } from './terminal-text';

/** Every service of Ratchet in this process, over the in-process bus. */
export interface EmbeddedRatchet {
  readonly transport: InProcessTransport;
  /** The orchestrator's API, called over the bus like any client would. */
  readonly client: ServiceClient<typeof OrchestratorServiceDefinition>;
  readonly orchestrator: OrchestratorService;
  readonly models: RoleModels;
  close(): Promise<void>;
}

export interface EmbeddedOptions {
  readonly config: CliConfig;
  readonly configDir: string;
  readonly dataDir: string;
  /** Replaces the configured models (the demo's scripted model). */
  readonly models?: RoleModels;
  /**
   * A command the policy asks about makes the task wait on a gate a person
   * decides (`ratchet ui`, whose page has the buttons); without it (`ratchet
   * run`, which has no one to ask mid-call) such a command is refused.
   */
  readonly commandGates?: boolean;
}


/**
 * Starts Ratchet in this process: PGlite in `dataDir`, every service hosted
 * on one in-process bus, the orchestrator driving tasks. Nothing listens on
 * the network.
 *
 * @throws AppError CONFIG_INVALID when no model is configured (naming the
 *   variables to set) or prompts.yaml is bad; whatever opening the data
 *   directory throws.
 */
export async function startEmbedded(options: EmbeddedOptions): Promise<EmbeddedRatchet> {
  const { config } = options;
  const models = options.models ?? (await createRoleModels(config.model, config.prices));
  const prompts = loadPrompts(options.configDir);
  const db = await openPglite({ dataDir: options.dataDir, vector: true });
  const closers: (() => Promise<void>)[] = [() => db.close()];
  const close = async () => {
    for (const closer of closers.reverse()) await closer().catch(() => undefined);
  };
  try {
    const transport = new InProcessTransport();
    closers.push(() => transport.close());
    // One redaction step for everything stored or logged: the configured secrets by value, then redaction.yaml's rules.
    const redactor = createRedactor(loadRedactionRules(options.configDir), { values: configuredSecrets(config) });
    const redact = (text: string) => redactor.redact(text).text;
    // Log lines carry model and server text to the terminal: made inert there like every printed line (JSON stays JSON).
    const destination = { write: (line: string) => process.stderr.write(terminalSafe(line)) };
    const logger = createLogger({ service: 'ratchet', level: config.log.level === 'info' ? 'warn' : config.log.level, destination, redact });
    const version = packageVersion(path.join(__dirname, '..'));
    const hosted: RunningService[] = [];
    closers.push(async () => {
      await Promise.all(hosted.map((service) => service.stop(1_000)));
    });
    const sandboxLimits = sandboxLimitsOf(config.sandbox);

    const sandboxClient = createClient(transport, SandboxRunnerServiceDefinition, { maxAttempts: 1 });
    // CheckCode runs Bandit through the same sandbox runner as the tests.
    const safety = await createSafetyService({ commandPolicy: loadCommandPolicy(options.configDir), dependencyPolicy: loadDependencyPolicy(options.configDir, process.env, { sandboxImage: config.sandbox.image }), code: loadCodeCheck(options.configDir), sandbox: sandboxClient });
    closers.push(() => safety.close());
    const sandbox = createSandboxRunnerService({ ...sandboxRunnerOptionsOf(config.sandbox), logger });
    void sandbox.driver.warm();
    closers.push(() => sandbox.close());
    const memory = await createMemoryService({ db, embedder: createEmbedder(config.embedder), ...learningOptionsOf(config.learning), redact });
    closers.push(() => memory.close());

    hosted.push(
      hostService({ name: 'safety', version, definition: SafetyServiceDefinition, implementation: safety.implementation }, { transport, logger }),
      hostService({ name: 'sandbox-runner', version, definition: SandboxRunnerServiceDefinition, implementation: sandbox.implementation, checks: sandbox.checks, instance: sandbox.instance }, { transport, logger }),
      hostService({ name: 'memory', version, definition: MemoryServiceDefinition, implementation: memory.implementation }, { transport, logger }),
      hostService({ name: 'planner', version, definition: PlannerServiceDefinition, implementation: createPlannerService({ roleModel: models.planner, reprompterModel: models.reprompter, prompts, settings: { planner: config.planner, reprompter: config.reprompter } }).implementation }, { transport, logger }),
      hostService({ name: 'coder', version, definition: CoderServiceDefinition, implementation: createCoderService({ roleModel: models.coder, prompts, settings: config.coder, transport, extractor: () => loadDefinitionExtractor() }).implementation }, { transport, logger }),
      hostService(
        {
          name: 'tester',
          version,
          definition: TesterServiceDefinition,
          implementation: createTesterService({ roleModel: models.tester, prompts, sandbox: sandboxClient, limits: sandboxLimits, image: config.sandbox.image, settings: config.tester }).implementation,
        },
        { transport, logger },
      ),
      hostService({ name: 'reflector', version, definition: ReflectorServiceDefinition, implementation: createReflectorService({ roleModel: models.reflector, reviewerModel: models.reviewer, auditorModel: models.auditor, prompts, settings: { reflector: config.reflector, reviewer: config.reviewer, auditor: config.auditor } }).implementation }, { transport, logger }),
    );

    const orchestrator = await createOrchestratorService({
      db,
      redact,
      profiles: loadProfiles(options.configDir),
      clients: agentClients(transport, config.orchestrator.modelCallTimeoutMs),
      publish: async (events) => {
        for (const event of events) await transport.appendEvent(event.taskId, TaskEvent.encode(event).finish());
      },
      // Embedded mode fails fast (Docker down is not a blip to wait out).
      settings: loopSettingsOf(config.orchestrator, config.sandbox.timeoutSeconds, { dependencyWaitMs: 0, commandGates: options.commandGates ?? false }),
      maxConcurrentTasks: config.orchestrator.maxConcurrentTasks,
      logger,
    });
    // Closed before the services it calls, so running tasks record their cancellation.
    closers.push(() => orchestrator.close());
    hosted.push(hostService({ name: 'orchestrator', version, definition: OrchestratorServiceDefinition, implementation: orchestrator.implementation }, { transport, logger }));
    await Promise.all(hosted.map((service) => service.server.ready));
    return { transport, client: createClient(transport, OrchestratorServiceDefinition, { defaultTimeoutMs: 60_000 }), orchestrator, models, close };
  } catch (error) {
    await close();
    throw error;
  }
}
