import { statusName } from '@ratchet/agent';
import { ApprovalDecision, TaskStatus, type ApproveRequest, type ApproveResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { Principal } from '@ratchet/grpc-api';
import { linkActiveSpan } from '@ratchet/telemetry';
import { InputKind } from '../domain/inputs';
import { toTaskProto } from '../domain/records';
import { principalOf } from './principal';
import { gateIdOf, taskIdOf } from './task-id';
import { commitInput, type HandlerContext } from './context';

/**
 * Approve: a decision on the gate a task waits on. APPROVED moves it on (a
 * final result to LEARNING, then SUCCEEDED); REJECTED sends it back to
 * PLANNING with the approver's comment as the re-plan reason. A gate whose
 * timeout passed is rejected the same way, by `timeout`.
 */
export function approve(context: HandlerContext) {
  return async (request: ApproveRequest, call: { readonly principal?: Principal } = {}): Promise<ApproveResponse> => {
    const taskId = taskIdOf(request.taskId);
    const gateId = gateIdOf(request.gateId);
    const approved = request.decision === ApprovalDecision.APPROVAL_DECISION_APPROVED;
    if (!approved && request.decision !== ApprovalDecision.APPROVAL_DECISION_REJECTED) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'decision must be APPROVED or REJECTED');
    const comment = request.comment.trim();
    if (comment.length > 10_000) throw new AppError(ErrorCode.INVALID_ARGUMENT, `comment is ${comment.length} characters; keep it under 10000`);
    // Who decided is who authenticated, never what the request says.
    const approver = principalOf(call).name;
    const { store } = context;
    const task = await store.tasks.get(taskId);
    // The phases after the decision go on in the task's own trace (its submit's); this call's trace points to it.
    linkActiveSpan(task.traceContext);
    if (task.status !== TaskStatus.TASK_STATUS_AWAITING_APPROVAL) throw new AppError(ErrorCode.FAILED_PRECONDITION, `task ${task.id} is ${statusName(task.status)}, not waiting for approval`);
    const gate = await store.approvals.get(task.id, gateId);
    if (gate.decision !== ApprovalDecision.APPROVAL_DECISION_PENDING) {
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `gate ${gateId} was already decided: ${ApprovalDecision[gate.decision].replace('APPROVAL_DECISION_', '')}${gate.approver ? ` by ${gate.approver}` : ''}`);
    }
    const now = context.now();
    const decided = { ...gate, approver, comment, decidedAt: now };
    const input = approved ? ({ kind: InputKind.APPROVED, at: now, gate: decided } as const) : ({ kind: InputKind.REJECTED, at: now, gate: decided } as const);
    const { state, decision } = await commitInput(context, task, input, `gate ${gateId} was being decided`);
    return { gate: decision.decidedGate, task: toTaskProto(state.task, false) };
  };
}

/** The approval timeout, as the principal that rejects a gate nobody decided in time. */
const timeoutPrincipal: Principal = Object.freeze({ name: 'timeout', team: '', roles: new Set<never>(), authenticated: false });

/** Rejects a gate nobody decided within its timeout; a decision that got there first wins. */
export function expireGate(context: HandlerContext) {
  const decideGate = approve(context);
  return async (taskId: string, gateId: string): Promise<void> => {
    await decideGate({ taskId, gateId, decision: ApprovalDecision.APPROVAL_DECISION_REJECTED, approver: '', comment: 'no decision within the approval timeout' }, { principal: timeoutPrincipal }).catch((error: unknown) => {
      if (AppError.from(error).code !== ErrorCode.FAILED_PRECONDITION) throw error;
    });
  };
}
