import type { ProjectProfile } from '@ratchet/contracts';
import type { Database } from '@ratchet/db';
import { TaskStore } from './adapters/store';
import type { LoopSettings } from './config';
import { answer, expireQuestions } from './handlers/answer';
import { approve, expireGate } from './handlers/approve';
import { cancelTask } from './handlers/cancel-task';
import { withAccessControl } from './handlers/access';
import type { HandlerContext } from './handlers/context';
import { getTask } from './handlers/get-task';
import { lessonHandlers } from './handlers/lessons';
import { listTasks } from './handlers/list-tasks';
import { resumeTask } from './handlers/resume-task';
import { submitTask } from './handlers/submit-task';
import { watchTask } from './handlers/watch-task';
import { phaseRunners, type AgentClients } from './runner/phases';
import { TaskRunner, type EventPublisher } from './runner/task-runner';
import { Scheduler } from './scheduler';
import type { OrchestratorService } from './orchestrator-api';

export type { OrchestratorService } from './orchestrator-api';

export interface OrchestratorServiceOptions {
  /** Where tasks live; the caller owns and closes it. */
  readonly db: Database;
  readonly clients: AgentClients;
  /** Publishes each stored event to live readers; the bus's task event stream. */
  readonly publish: EventPublisher;
  /**
   * Live events of a task (the bus's task event stream), used by WatchTask
   * only as a signal that new events are stored. Without it, WatchTask polls the store.
   */
  readonly live?: (taskId: string) => Promise<AsyncIterable<unknown> & { stop(): Promise<void> }>;
  readonly settings: LoopSettings;
  /** Tasks run at once; more wait in QUEUED. Default 4. */
  readonly maxConcurrentTasks?: number;
  /** Names this replica in task leases; keep it across restarts to take its tasks back at once. Default: random. */
  readonly owner?: string;
  /** How long a lease lasts without renewal, ms (renewed every third of it). Default 30000. */
  readonly leaseMs?: number;
  /**
   * A replica among others: every this many ms, take over unfinished tasks
   * nobody drives (new ones, and those of a replica that died), and on
   * close hand running tasks over instead of cancelling them. 0 (the
   * default, embedded mode) drives only tasks submitted here.
   */
  readonly claimIntervalMs?: number;
  readonly now?: () => Date;
  readonly logger?: { error(details: object, message: string): void; warn(details: object, message: string): void };
  /** Removes secrets from what phases report before it is stored (default: the built-in rules). */
  readonly redact?: (text: string) => string;
  /** The project profiles tasks may name (`loadProfiles`); default none. */
  readonly profiles?: readonly ProjectProfile[];
}


/**
 * The orchestrator: owns task state, runs each task through the loop in
 * the background (at most `maxConcurrentTasks` at once) and answers queries
 * from the store. One handler per RPC under `handlers/`; the scheduler
 * decides which tasks run here; the task runner is the only writer of a
 * task's state (handlers store a person's input through `Scheduler.commit`).
 */
export async function createOrchestratorService(options: OrchestratorServiceOptions): Promise<OrchestratorService> {
  const store = await TaskStore.open(options.db, options.owner === undefined ? {} : { owner: options.owner });
  const now = options.now ?? (() => new Date());
  const { settings } = options;
  const runner = new TaskRunner({
    store,
    phases: phaseRunners(options.clients, settings.phases, now),
    policy: settings.policy,
    publish: options.publish,
    now,
    maxWaitMs: settings.dependencyWaitMs,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.redact === undefined ? {} : { redact: options.redact }),
  });
  const leaseMs = options.leaseMs ?? 30_000;
  // The scheduler needs the gate-expiry handler, which needs the scheduler: filled in just below.
  const late: { expire?: (taskId: string, gateId: string) => Promise<void>; expireQuestions?: (taskId: string) => Promise<void> } = {};
  const scheduler = new Scheduler({
    store,
    runner,
    maxConcurrentTasks: options.maxConcurrentTasks ?? 4,
    leaseMs,
    claimIntervalMs: options.claimIntervalMs ?? 0,
    expireGate: (taskId, gateId) => late.expire?.(taskId, gateId) ?? Promise.resolve(),
    expireQuestions: (taskId) => late.expireQuestions?.(taskId) ?? Promise.resolve(),
    ...(options.logger === undefined ? {} : { logger: options.logger }),
  });
  const profiles = [...(options.profiles ?? [])].sort((left, right) => left.name.localeCompare(right.name));
  const context: HandlerContext = { store, scheduler, runner, policy: settings.policy, profiles, publish: options.publish, now, leaseMs, ...(options.live === undefined ? {} : { live: options.live }) };
  late.expire = expireGate(context);
  late.expireQuestions = expireQuestions(context);

  const guarded = withAccessControl(
    context,
    {
      submitTask: submitTask(context),
      getTask: getTask(context),
      listTasks: listTasks(context),
      cancelTask: cancelTask(context),
      resumeTask: resumeTask(context),
      approve: approve(context),
      answer: answer(context),
      listProfiles: () => Promise.resolve({ profiles }),
      ...lessonHandlers(options.clients.memory),
    },
    watchTask(context),
  );
  return {
    ...guarded,
    whenDone: (taskId) => scheduler.whenDone(taskId),
    events: (taskId, fromSequence) => store.events.list(taskId, fromSequence),
    close: () => scheduler.close(),
  };
}
