import { randomUUID } from 'node:crypto';
import { msOf } from '@ratchet/agent';
import { PhaseSwitch, StopReason, TaskStatus, type SubmitTaskRequest, type SubmitTaskResponse, type TaskPhases } from '@ratchet/contracts';
import type { Principal } from '@ratchet/grpc-api';
import { captureTraceContext, setSpanAttributes } from '@ratchet/telemetry';
import { resolveProfile } from '../domain/profiles';
import { emptyUsage, toTaskProto, type TaskRecord } from '../domain/records';
import type { HandlerContext } from './context';
import { principalOf } from './principal';
import { validateSubmit } from './validate-submit';

/** The optional phases a task runs: what the request switches on or off, the configured default where it says nothing. */
export function phasesOf(request: Pick<SubmitTaskRequest, 'reprompt' | 'questions' | 'review' | 'audit'>, defaults: TaskPhases): TaskPhases {
  const on = (value: PhaseSwitch, fallback: boolean) => (value === PhaseSwitch.PHASE_SWITCH_ON ? true : value === PhaseSwitch.PHASE_SWITCH_OFF ? false : fallback);
  return {
    reprompt: on(request.reprompt, defaults.reprompt),
    questions: on(request.questions, defaults.questions),
    review: on(request.review, defaults.review),
    audit: on(request.audit, defaults.audit),
  };
}

/** SubmitTask: stores a QUEUED task and runs it here when a slot is free (or leaves it to a replica with one). */
export function submitTask(context: HandlerContext) {
  return async (request: SubmitTaskRequest, call: { readonly principal?: Principal } = {}): Promise<SubmitTaskResponse> => {
    const principal = principalOf(call);
    validateSubmit(request);
    const profile = resolveProfile(context.profiles, request.profile, request.language);
    const created = context.now();
    // The submit's span is the parent of every phase span, wherever and whenever the task runs.
    const traceContext = captureTraceContext();
    const record: TaskRecord = {
      id: randomUUID(),
      goal: request.goal.trim(),
      language: request.language,
      status: TaskStatus.TASK_STATUS_QUEUED,
      statusReason: '',
      stopReason: StopReason.STOP_REASON_UNSPECIFIED,
      currentIteration: 0,
      replanCount: 0,
      resumeCount: 0,
      replanReason: '',
      budget: request.budget ?? { maxIterations: 0, maxTokens: 0, maxCostUsd: 0, maxWallTime: undefined },
      usage: emptyUsage(),
      labels: { ...request.labels },
      workspace: request.workspace,
      dataFiles: request.dataFiles,
      acceptanceTests: request.acceptanceTests,
      generatedTests: [],
      resultFiles: [],
      lessons: [],
      requestId: request.requestId,
      approvalKinds: [...new Set(request.approvalPolicy?.required ?? [])],
      commandDecisions: [],
      dependencyDecisions: [],
      questions: [],
      phases: phasesOf(request, context.policy.phases),
      ...(profile === undefined ? {} : { profile }),
      testCommand: [...request.testCommand],
      setupCommand: request.setupCommand.trim(),
      testEdits: request.testEdits,
      project: request.project.trim(),
      memory: request.memory,
      team: principal.team,
      submittedBy: principal.name,
      ...(traceContext['traceparent'] === undefined ? {} : { traceContext }),
      approvalTimeoutMs: msOf(request.approvalPolicy?.timeout),
      pendingGateId: '',
      createdAt: created,
      updatedAt: created,
      version: 0,
    };
    const keep = context.scheduler.hasSlot();
    const result = await context.store.tasks.create(record, [{ time: created, iteration: 0, payload: { $case: 'taskSubmitted', taskSubmitted: { task: toTaskProto(record, false) } } }], keep ? { leaseMs: context.leaseMs } : {});
    // The task span to find a task's trace by (a repeated request id: the task it created first).
    setSpanAttributes({ 'ratchet.task_id': result.task.id });
    if (result.created) {
      await context.publish(result.events);
      context.scheduler.enqueue(keep ? record.id : undefined);
    }
    return { task: toTaskProto(result.task, false) };
  };
}
