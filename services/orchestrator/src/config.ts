import { configSection } from '@ratchet/config';
import { AppError, ErrorCode } from '@ratchet/errors';
import { z } from 'zod';
import { UnansweredQuestions, type LoopPolicy } from './domain/policy';
import type { PhaseSettings } from './runner/phases';

/**
 * The `orchestrator` config section: loop defaults for every task, and how
 * a replica shares tasks with others (leases). Used by the orchestrator
 * process and by embedded mode.
 */
export const orchestratorConfigSection = configSection({
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
  /** The same failure (error signature and failing tests) this many times in a row asks for a re-plan. */
  noProgressReplanAfter: z.number().int().min(2).max(100).default(2),
  /** The same failure this many times in a row ends the task (no progress). */
  noProgressStopAfter: z.number().int().min(2).max(100).default(3),
  lessonLimit: z.number().int().min(1).max(50).default(5),
  lessonMinScore: z.number().min(0).max(1).default(0.2),
  /** Tasks one replica drives at once. */
  maxConcurrentTasks: z.number().int().min(1).max(1000).default(4),
  /** Names this replica in task leases; keep it stable across restarts (a StatefulSet pod name) to take its tasks back at once. Default: random per process. */
  instanceId: z.string().min(1).optional(),
  /** A task lease lasts this long without renewal, ms; a dead replica's tasks move on after it. */
  leaseMs: z.number().int().min(1_000).default(15_000),
  /** How often a replica looks for tasks nobody drives, ms. */
  claimIntervalMs: z.number().int().min(100).default(1_000),
  /**
   * How long a phase waits for a service nobody serves (no responders: it is
   * restarting) or a database with no free connection, seconds, running
   * again with backoff, before the task fails naming it; the task's
   * wall-time budget still ends it. 0 = fail at once.
   */
  dependencyWaitSeconds: z.number().int().min(0).max(86_400).default(300),
  /** Deadline of one coding phase of the agentic coder (workspace tasks), ms; keep it above coder.phaseTimeoutSeconds. */
  agentPhaseTimeoutMs: z.number().int().positive().default(960_000),
  /** Run commands the command policy asks a person about, for every task (embedded `ratchet run --yes`); otherwise they are refused. */
  approveAskedCommands: z.boolean().default(false),
  /** The optional phases a task runs when its submit leaves them unset (`ratchet run --reprompt`, `--enable-review`, `--enable-audit`). */
  phases: z
    .object({
      /** Turn each goal into a structured spec before planning. */
      reprompt: z.boolean().default(false),
      /** Let the reprompter ask clarifying questions (off: it states its assumptions instead). */
      questions: z.boolean().default(true),
      /** A reviewer role reads each change before the tests run; blocking findings fail the attempt. */
      review: z.boolean().default(false),
      /** A security auditor role reads each change before the tests run; high-severity findings fail the attempt. */
      audit: z.boolean().default(false),
    })
    .strict()
    .prefault({}),
  /** The reprompter's clarifying questions. */
  questions: z
    .object({
      /** Questions per task, over all rounds; 0 asks none. */
      max: z.number().int().min(0).max(20).default(3),
      /** How long open questions wait for an answer, seconds; 0 waits forever. */
      timeoutSeconds: z.number().int().min(0).max(7 * 24 * 60 * 60).default(86_400),
      /** What unanswered questions become when their time is up: go on with the stated assumptions, or end the task. */
      onTimeout: z.enum([UnansweredQuestions.ASSUME, UnansweredQuestions.FAIL]).default(UnansweredQuestions.ASSUME),
    })
    .strict()
    .prefault({}),
});

export type OrchestratorSettings = Readonly<z.infer<typeof orchestratorConfigSection>>;

/** How the loop runs every task: the phases' deadlines and retrieval, the policy, and how long a phase waits for a missing service or database. */
export interface LoopSettings {
  readonly phases: PhaseSettings;
  readonly policy: LoopPolicy;
  /** How long a phase that failed with a retryable error (a service or the database gone) waits and retries before the task fails, ms; 0 = fail at once. */
  readonly dependencyWaitMs: number;
}

/**
 * The loop's settings from the section; the sandbox timeout bounds a test
 * run's deadline. `options.dependencyWaitMs` overrides the section's wait
 * (embedded mode fails at once).
 *
 * @throws AppError CONFIG_INVALID when noProgressStopAfter is not above noProgressReplanAfter.
 */
export function loopSettingsOf(settings: OrchestratorSettings, sandboxTimeoutSeconds: number, options: { dependencyWaitMs?: number; commandGates?: boolean } = {}): LoopSettings {
  if (settings.noProgressStopAfter <= settings.noProgressReplanAfter) {
    throw new AppError(
      ErrorCode.CONFIG_INVALID,
      `orchestrator.noProgressStopAfter (${settings.noProgressStopAfter}) must be greater than orchestrator.noProgressReplanAfter (${settings.noProgressReplanAfter}): a task re-plans before it stops (RATCHET_ORCHESTRATOR_NO_PROGRESS_STOP_AFTER)`,
    );
  }
  const defaultBudget = {
    maxIterations: settings.maxIterations,
    maxTokens: settings.maxTokens,
    maxCostUsd: settings.maxCostUsd,
    maxWallTimeMs: settings.maxWallTimeSeconds * 1000,
  };
  return {
    phases: {
      defaultBudget,
      modelCallTimeoutMs: settings.modelCallTimeoutMs,
      // The test run waits for a runner slot as well as the run itself.
      testRunTimeoutMs: (sandboxTimeoutSeconds + 60) * 1000,
      serviceCallTimeoutMs: 30_000,
      agentPhaseTimeoutMs: settings.agentPhaseTimeoutMs,
      approveAskedCommands: settings.approveAskedCommands,
      // Only a server has people who can answer a gate while the task waits.
      commandGates: options.commandGates ?? false,
      lessonLimit: settings.lessonLimit,
      lessonMinScore: settings.lessonMinScore,
      maxQuestions: settings.questions.max,
    },
    policy: {
      defaultBudget,
      maxReplans: settings.maxReplans,
      noProgress: { replanAfter: settings.noProgressReplanAfter, stopAfter: settings.noProgressStopAfter },
      phases: { ...settings.phases },
      questions: { max: settings.questions.max, timeoutMs: settings.questions.timeoutSeconds * 1000, onTimeout: settings.questions.onTimeout },
    },
    dependencyWaitMs: options.dependencyWaitMs ?? settings.dependencyWaitSeconds * 1000,
  };
}
