import { configSection, type DeepReadonly } from '@ratchet/config';
import type { SandboxLimits } from '@ratchet/contracts';
import { z } from 'zod';

/** A package registry's address: http or https; an IP address is fine (a mirror on the local network). */
const registryUrl = z.url({ protocol: /^https?$/, error: 'an http:// or https:// URL, for example https://pypi.org/simple' });

/** A registry host the install proxy may reach: `host:port`. */
const hostPort = z.string().regex(/^[A-Za-z0-9.-]+:\d{1,5}$|^\[[0-9A-Fa-f:.]+\]:\d{1,5}$/, 'host:port, for example files.pythonhosted.org:443');

/**
 * The `sandbox` config section shared by embedded mode, the tester (which
 * asks for these limits) and the sandbox runner (which applies them).
 */
export const sandboxConfigSection = configSection({
  /** docker (hardened containers) or bwrap (bubblewrap namespaces, for hosts without Docker). */
  driver: z.enum(['docker', 'bwrap']).default('docker'),
  /** bwrap: the sandbox image's root filesystem (tools/ensure-sandbox-rootfs.sh); default /var/lib/ratchet/sandbox-rootfs as root, ~/.cache/ratchet/sandbox-rootfs otherwise. */
  rootfs: z.string().min(1).optional(),
  /** docker: an OCI runtime registered with the daemon, for example runsc (gVisor); default the daemon's. */
  runtime: z.string().min(1).optional(),
  /** The image deploy/sandbox/build-image.sh builds. */
  image: z.string().min(1).default('ratchet-sandbox:3'),
  /** Docker engine socket. */
  dockerSocket: z.string().min(1).default('/var/run/docker.sock'),
  timeoutSeconds: z.number().int().min(1).max(3600).default(120),
  memoryMb: z.number().int().min(32).default(512),
  pids: z.number().int().min(8).default(128),
  cpus: z.number().positive().default(1),
  outputLimitKb: z.number().int().min(1).default(256),
  workDirMb: z.number().int().min(1).default(64),
  /** Sandboxes started ahead for test runs, each used once, then removed and replaced after the run; 0 starts one per run. */
  warmPool: z.number().int().min(0).max(64).default(2),
  /** An idle warm pool is emptied after this long, seconds (the next run refills it). */
  warmIdleSeconds: z.number().int().min(5).default(300),
  /** A sandbox session (the agentic coder's warm sandbox) nobody used for this long is closed, seconds. */
  sessionIdleSeconds: z.number().int().min(5).max(86_400).default(600),
  /** Sessions one runner holds at once; one more is refused (retryable) until one closes. */
  maxSessions: z.number().int().min(1).max(256).default(16),
  /**
   * Third-party packages of a job (SandboxJob.dependencies): installed in an
   * install sandbox whose only way out is the runner's filtering proxy to
   * these registries, cached as a layer per requirements hash and mounted
   * read-only at /deps into the job's sandbox (deploy/sandbox/README.md, "Dependencies").
   */
  dependencies: z
    .object({
      /** Where layers are kept; default /var/lib/ratchet/deps as root, ~/.cache/ratchet/deps otherwise. Docker in a container: the same path inside and outside. */
      cacheDirectory: z.string().min(1).optional(),
      /** A PEM bundle the installers trust instead of the image's (a TLS-intercepting egress proxy, a private mirror's CA). */
      caFile: z.string().min(1).optional(),
      /** An install running longer fails, seconds. */
      timeoutSeconds: z.number().int().min(5).max(3600).default(300),
      /** An install larger than this fails (its files, downloads and temporary files together), MB. */
      maxLayerMegabytes: z.number().int().min(1).max(1024).default(512),
      python: z
        .object({
          /** pip's --index-url: PyPI or a PEP 503 mirror. */
          indexUrl: registryUrl.default('https://pypi.org/simple'),
          /** More host:port the proxy lets pip reach (where the index's files live). */
          extraHosts: z.array(hostPort).default(['files.pythonhosted.org:443']),
        })
        .strict()
        .prefault({}),
      npm: z
        .object({
          /** npm's registry: registry.npmjs.org or a mirror. */
          registry: registryUrl.default('https://registry.npmjs.org'),
          /** More host:port the proxy lets npm reach (a mirror serving tarballs elsewhere). */
          extraHosts: z.array(hostPort).default([]),
        })
        .strict()
        .prefault({}),
    })
    .strict()
    .prefault({}),
});

/** The `sandbox` section, deeply read-only (as loadConfig returns it: `dependencies` has lists). */
export type SandboxSettings = DeepReadonly<z.infer<typeof sandboxConfigSection>>;

/**
 * The `coder` config section: how the agentic coder works (workspace tasks,
 * and greenfield tasks with `mode: agent`) and its bounds per coding phase.
 */
export const coderConfigSection = configSection({
  /** Greenfield tasks: `files` (one reply with whole files) or `agent` (tools over a sandbox session). Workspace tasks always use the agent. */
  mode: z.enum(['files', 'agent']).default('files'),
  /** Tool calls in one coding phase before it stops. */
  maxSteps: z.number().int().min(1).max(500).default(40),
  /** Wall time of one coding phase, seconds. */
  phaseTimeoutSeconds: z.number().int().min(10).max(7_200).default(900),
  /** Tokens of one coder prompt (system, task, history); older tool outputs are summarised to stay under it. */
  promptBudgetTokens: z.number().int().min(2_000).max(1_000_000).default(24_000),
  /** Of that budget, what the repository map may take. */
  repoMapTokens: z.number().int().min(0).max(200_000).default(3_000),
  /** Default timeout of one command the coder runs, seconds. */
  commandTimeoutSeconds: z.number().int().min(1).max(3_600).default(120),
});

export type CoderSettings = Readonly<z.infer<typeof coderConfigSection>>;

/**
 * A role's prompt budget section: `promptBudgetTokens`, the tokens one
 * prompt of the role (its system and user message, counted with the
 * o200k_base tokenizer) may take; the goal, plan, failing output, the code
 * that matters and a repository map are fitted to it (see `fitPrompt`).
 * A repair round after an invalid reply adds the reply and its problems.
 */
function promptBudgetSection(defaultTokens: number) {
  return configSection({
    promptBudgetTokens: z.number().int().min(2_000).max(1_000_000).default(defaultTokens),
  });
}

/**
 * The `planner` section: its prompt budget (the workspace as a map plus the
 * files most relevant to the goal), and the read-only lookups (read_file,
 * search) the planner of a workspace task may make before it plans, whose
 * results come out of that budget.
 */
export const plannerConfigSection = configSection({
  promptBudgetTokens: z.number().int().min(2_000).max(1_000_000).default(16_000),
  /** Lookups one plan may make in all (a reply may ask for several at once); 0 turns them off. */
  lookupCalls: z.number().int().min(0).max(50).default(8),
  /** Of the prompt budget, what the lookups' results may take together; at most half the budget is used. */
  lookupTokens: z.number().int().min(0).max(500_000).default(4_000),
});

export type PlannerSettings = Readonly<z.infer<typeof plannerConfigSection>>;
/** The `reprompter` section: its prompt budget (goal, workspace map, answers). */
export const reprompterConfigSection = promptBudgetSection(6_000);
/** The `tester` section: its prompt budget (goal, plan, the interface of the code under test, a map). */
export const testerConfigSection = promptBudgetSection(12_000);
/** The `reflector` section: its prompt budget (failing output, the code it points at, a map). */
export const reflectorConfigSection = promptBudgetSection(8_000);
/** The `reviewer` section: its prompt budget (goal, spec, plan, the diff). */
export const reviewerConfigSection = promptBudgetSection(10_000);
/** The `auditor` section: its prompt budget (goal, the diff, the scanners' findings). */
export const auditorConfigSection = promptBudgetSection(10_000);

/** A role's prompt budget as its config section gives it. */
export type RoleBudgetSettings = Readonly<z.infer<typeof reflectorConfigSection>>;

/** The JetStream work queue the tester enqueues sandbox jobs on and the sandbox runners pull from. */
export const SANDBOX_JOB_QUEUE = 'sandbox-jobs';
/**
 * The settings of the sandbox job queue's consumer, unless `runner.ackWaitMs`
 * and `runner.maxDeliver` say otherwise: a job whose runner sends no
 * progress for `ackWaitMs` goes to another runner; `maxDeliver` deliveries
 * before it is dead-lettered. With per-role NATS users the orchestrator
 * creates the consumer, so it reads the same `runner` settings.
 */
export const SANDBOX_JOB_QUEUE_DEFAULTS = { ackWaitMs: 10_000, maxDeliver: 3 } as const;
/** The `runner` section: how sandbox runners take jobs from the queue. Read by the runners and by the orchestrator, which creates the queue. */
export const runnerConfigSection = configSection({
  /** Sandbox jobs this process runs at once; it pulls no more than that from the queue. */
  concurrency: z.number().int().min(1).max(64).default(2),
  /** A job whose runner stops sending progress for this long goes to another runner, ms. */
  ackWaitMs: z.number().int().min(1_000).default(SANDBOX_JOB_QUEUE_DEFAULTS.ackWaitMs),
  /** Deliveries of one job before it is dead-lettered. */
  maxDeliver: z.number().int().min(1).default(SANDBOX_JOB_QUEUE_DEFAULTS.maxDeliver),
});

/** The job limits a `sandbox` section describes, in the contract's units (bytes). */
export function sandboxLimitsOf(settings: SandboxSettings): SandboxLimits {
  return {
    memoryBytes: settings.memoryMb * 1024 * 1024,
    pids: settings.pids,
    cpus: settings.cpus,
    timeout: { seconds: settings.timeoutSeconds, nanos: 0 },
    outputLimitBytes: settings.outputLimitKb * 1024,
    workDirBytes: settings.workDirMb * 1024 * 1024,
  };
}

/** The `database` section of services that keep state in Postgres (env RATCHET_DATABASE_URL, ...). */
export const databaseConfigSection = configSection({
  /** postgres://user:password@host:5432/db; required by the orchestrator and memory processes. */
  url: z.string().min(1).optional(),
  /** Connections in the pool. */
  maxConnections: z.number().int().min(1).max(200).default(10),
  /** Server-side limit per statement, ms. */
  statementTimeoutMs: z.number().int().positive().default(30_000),
});

/** The config directory: RATCHET_CONFIG_DIR, else `config/` in the working directory. */
export function configDirectoryOf(env: NodeJS.ProcessEnv = process.env): string {
  const fromEnv = env['RATCHET_CONFIG_DIR'];
  return fromEnv !== undefined && fromEnv !== '' ? fromEnv : `${process.cwd()}/config`;
}
