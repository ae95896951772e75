import { describe, expect, it } from '@jest/globals';
import { ApprovalKind, DependencyVerdict, Phase, SafetyVerdict, StopReason, TaskStatus, type DependencyDecision } from '@ratchet/contracts';
import { decide } from '../src/domain/decide';
import { installList } from '../src/domain/dependencies';
import { InputKind, type InputOf, type TaskInput } from '../src/domain/inputs';
import { IterationErrorCode } from '../src/domain/iteration-errors';
import type { TaskState } from '../src/domain/records';
import { at, plan, policy, sampleInput, stateIn } from './fixtures';

const decision = (name: string, verdict: DependencyVerdict, overrides: Partial<DependencyDecision> = {}): DependencyDecision => ({
  dependency: { name, versionSpec: '' },
  verdict,
  reason: verdict === DependencyVerdict.DEPENDENCY_VERDICT_DENIED ? 'denied by config/dependencies.yaml: unmaintained' : 'policy',
  installSpec: verdict === DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED ? '>=2,<4' : '',
  declared: true,
  importedAt: [],
  approvedBy: '',
  provided: false,
  ...overrides,
});

const planned = (dependencies: readonly DependencyDecision[], when = at(3)): TaskInput => ({
  ...(sampleInput(InputKind.PLANNED, when) as InputOf<typeof InputKind.PLANNED>),
  plan: { ...plan, dependencies: dependencies.map((item) => item.dependency ?? { name: '', versionSpec: '' }) },
});

/** The dependency check's answer on the stored plan's packages. */
const judged = (dependencies: readonly DependencyDecision[], when = at(3)): TaskInput => ({ kind: InputKind.PACKAGES_JUDGED, at: when, startedAt: when, dependencies, gateId: 'gate-deps' });

/** The state after a plan declaring `dependencies` is stored (its packages not yet judged, when it declares any). */
const planStored = (state: TaskState, dependencies: readonly DependencyDecision[], when = at(3)): TaskState => apply(state, planned(dependencies, when));

/** The state after a plan declaring `dependencies` is stored and the check answered `dependencies`. */
const planJudged = (state: TaskState, dependencies: readonly DependencyDecision[], when = at(3)): TaskState => {
  const stored = planStored(state, dependencies, when);
  return dependencies.length === 0 ? stored : apply(stored, judged(dependencies, when));
};

/** Applies `input` to `state` and returns the state after it. */
function apply(state: TaskState, input: TaskInput): TaskState {
  const result = decide(state, input, policy);
  const changed = new Map(result.iterations.map((item) => [item.number, item]));
  return { task: result.task, iterations: [...state.iterations.filter((item) => !changed.has(item.number)), ...changed.values()] };
}

describe('decide: dependencies', () => {
  const planning = stateIn(TaskStatus.TASK_STATUS_PLANNING, { currentIteration: 0 }, []);

  it('codes straight away when the policy allows every package, and the tests get them installed', () => {
    const state = planJudged(planning, [decision('flask', DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED)]);
    expect(state.task.status).toBe(TaskStatus.TASK_STATUS_CODING);
    expect(installList(state.task)).toEqual([{ name: 'flask', versionSpec: '>=2,<4' }]);
  });

  it('raises a DEPENDENCY_INSTALL gate for a package that needs approval, and codes with it once approved', () => {
    const checked = [decision('flask', DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED), decision('leftpad', DependencyVerdict.DEPENDENCY_VERDICT_NEEDS_APPROVAL)];
    const stored = planStored(planning, checked);
    const input = judged(checked);
    const raised = decide(stored, input, policy);
    expect(raised.task).toMatchObject({ status: TaskStatus.TASK_STATUS_AWAITING_APPROVAL, pendingGateId: 'gate-deps', currentIteration: 1 });
    expect(raised.gate).toMatchObject({ kind: ApprovalKind.APPROVAL_KIND_DEPENDENCY_INSTALL, gateId: 'gate-deps', iteration: 1 });
    expect(raised.gate?.summary).toContain('leftpad');
    expect(raised.gate?.summary).not.toContain('flask');
    // The iteration waits before coding, not after a passing run.
    expect(raised.iterations[0]?.phase).toBe(Phase.PHASE_CODING);
    expect(raised.events.map((event) => event.payload?.$case)).toContain('approvalRequested');
    const waiting = apply(stored, input);
    expect(installList(waiting.task)).toEqual([{ name: 'flask', versionSpec: '>=2,<4' }]);

    const gate = { ...(raised.gate as NonNullable<typeof raised.gate>), approver: 'ana', comment: 'fine for this task', decidedAt: at(5) };
    const approved = apply(waiting, { kind: InputKind.APPROVED, at: at(5), gate });
    expect(approved.task).toMatchObject({ status: TaskStatus.TASK_STATUS_CODING, pendingGateId: '' });
    expect(approved.task.dependencyDecisions.find((item) => item.dependency?.name === 'leftpad')).toMatchObject({
      verdict: DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED,
      approvedBy: 'ana',
      reason: 'approved by ana: fine for this task',
    });
    expect(installList(approved.task).map((item) => item.name)).toEqual(['flask', 'leftpad']);
  });

  it('plans again without a refused package, and ends the task if the new plan still needs it', () => {
    const leftpad = [decision('leftpad', DependencyVerdict.DEPENDENCY_VERDICT_NEEDS_APPROVAL)];
    const waiting = planJudged(planning, leftpad);
    const gate = { ...(decide(planStored(planning, leftpad), judged(leftpad), policy).gate as NonNullable<ReturnType<typeof decide>['gate']>), approver: 'ana', comment: 'use the standard library', decidedAt: at(5) };
    const rejected = apply(waiting, { kind: InputKind.REJECTED, at: at(5), gate });
    expect(rejected.task.status).toBe(TaskStatus.TASK_STATUS_PLANNING);
    expect(rejected.task.replanReason).toBe('leftpad was refused by ana: use the standard library; plan without it');
    expect(installList(rejected.task)).toEqual([]);

    // The policy's answer on the re-plan is "needs approval" again, but a person already refused it for this task.
    const again = planJudged(rejected, leftpad, at(6));
    expect(again.task).toMatchObject({ status: TaskStatus.TASK_STATUS_FAILED, stopReason: StopReason.STOP_REASON_SAFETY_BLOCKED });
    expect(again.task.statusReason).toBe('the plan needs leftpad, which is refused (refused by ana: use the standard library)');

    // A plan that does without it goes on, and the refusal stays on the record.
    const without = planJudged(rejected, [], at(6));
    expect(without.task.status).toBe(TaskStatus.TASK_STATUS_CODING);
    expect(without.task.dependencyDecisions).toEqual([expect.objectContaining({ verdict: DependencyVerdict.DEPENDENCY_VERDICT_DENIED, dependency: { name: 'leftpad', versionSpec: '' } })]);
  });

  it('ends the task on a package the policy denies, with the policy reason', () => {
    const denied = planJudged(planning, [decision('pycrypto', DependencyVerdict.DEPENDENCY_VERDICT_DENIED)]);
    expect(denied.task).toMatchObject({ status: TaskStatus.TASK_STATUS_FAILED, stopReason: StopReason.STOP_REASON_SAFETY_BLOCKED });
    expect(denied.task.statusReason).toBe('the plan needs pycrypto, which is refused (denied by config/dependencies.yaml: unmaintained)');
    expect(denied.task.dependencyDecisions).toHaveLength(1);
  });

  it('adds the allowed imports the plan did not declare, once', () => {
    const checking = stateIn(TaskStatus.TASK_STATUS_SAFETY_CHECK, { dependencyDecisions: [decision('flask', DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED)] });
    const undeclared = [decision('requests', DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED, { declared: false, importedAt: ['app.py:2'] }), decision('Flask', DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED, { declared: false })];
    const passed = apply(checking, { ...(sampleInput(InputKind.SAFETY_PASSED, at(5)) as InputOf<typeof InputKind.SAFETY_PASSED>), undeclared });
    expect(installList(passed.task).map((item) => item.name)).toEqual(['flask', 'requests']);
  });

  it('asks a person about a package the change imports that the policy asks about (a SAFETY_OVERRIDE gate), and tests the change with it once approved', () => {
    const checking = stateIn(TaskStatus.TASK_STATUS_SAFETY_CHECK, { dependencyDecisions: [decision('flask', DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED)] });
    const finding = { ruleId: 'dep.undeclared-import', severity: 2, path: 'app.py', line: 1, column: 1, message: 'padkit needs approval', snippet: '', remediation: '', cwe: '', confidence: 0, tool: 'ratchet', action: SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL, preExisting: false };
    const asked = { ...(sampleInput(InputKind.SAFETY_ASKED, at(5)) as InputOf<typeof InputKind.SAFETY_ASKED>), findings: [finding], undeclared: [decision('requests', DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED, { declared: false })] };
    const raised = decide(checking, asked, policy);
    expect(raised.task).toMatchObject({ status: TaskStatus.TASK_STATUS_AWAITING_APPROVAL, pendingGateId: 'gate-imports' });
    expect(raised.gate).toMatchObject({ kind: ApprovalKind.APPROVAL_KIND_SAFETY_OVERRIDE, gateId: 'gate-imports', iteration: 1 });
    expect(raised.gate?.summary).toMatch(/^The change imports a package the dependency policy does not allow by itself: padkit\. Approve to install it/);
    // The iteration waits in its safety check, with what the check found.
    expect(raised.iterations[0]).toMatchObject({ phase: Phase.PHASE_SAFETY_CHECK, safetyFindings: [finding] });
    expect(raised.events.map((event) => event.payload?.$case)).toEqual(['phaseCompleted', 'approvalRequested', 'taskStatusChanged']);
    // What waits for a person is counted as that, not as blocking.
    const completed = raised.events[0]?.payload;
    expect(completed?.$case === 'phaseCompleted' && completed.phaseCompleted.summary).toBe('waiting for a person: 1 finding(s), not blocking, 1 for a person to decide');
    const waiting = apply(checking, asked);
    // Nothing it waits for is installed yet; the allowed undeclared import is.
    expect(installList(waiting.task).map((item) => item.name)).toEqual(['flask', 'requests']);

    const gate = { ...(raised.gate as NonNullable<typeof raised.gate>), approver: 'ana', comment: '', decidedAt: at(6) };
    const approved = apply(waiting, { kind: InputKind.APPROVED, at: at(6), gate });
    // On to the tests (no review or audit in this task), not back to the coder: the change stands as checked.
    expect(approved.task).toMatchObject({ status: TaskStatus.TASK_STATUS_TESTING, pendingGateId: '' });
    expect(installList(approved.task).map((item) => item.name)).toEqual(['flask', 'requests', 'padkit']);
    expect(approved.task.dependencyDecisions.find((item) => item.dependency?.name === 'padkit')).toMatchObject({ verdict: DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED, approvedBy: 'ana' });
  });

  it('sends a change whose imported package a person refused to the reflector, and does not ask about that package again', () => {
    const checking = stateIn(TaskStatus.TASK_STATUS_SAFETY_CHECK);
    const asked = sampleInput(InputKind.SAFETY_ASKED, at(5));
    const gate = { ...(decide(checking, asked, policy).gate as NonNullable<ReturnType<typeof decide>['gate']>), approver: 'ana', comment: 'write the padding yourself', decidedAt: at(6) };
    const rejected = apply(apply(checking, asked), { kind: InputKind.REJECTED, at: at(6), gate });
    expect(rejected.task).toMatchObject({ status: TaskStatus.TASK_STATUS_REFLECTING, pendingGateId: '' });
    expect(rejected.iterations.at(-1)?.error).toMatchObject({
      code: IterationErrorCode.SAFETY_BLOCKED,
      message: 'the safety check blocked the code: the change imports packages a person must allow; padkit was refused by ana: write the padding yourself; do without it',
    });
    expect(installList(rejected.task)).toEqual([]);

    // The next attempt imports it again: blocked at once, no second gate.
    const again = decide({ ...rejected, task: { ...rejected.task, status: TaskStatus.TASK_STATUS_SAFETY_CHECK } }, sampleInput(InputKind.SAFETY_ASKED, at(8)), policy);
    expect(again.task.status).toBe(TaskStatus.TASK_STATUS_REFLECTING);
    expect(again.gate).toBeUndefined();
    expect(again.iterations.at(-1)?.error?.message).toBe('the safety check blocked the code: the change imports padkit, refused by ana: write the padding yourself earlier in this task; do without it');
  });

  it('records a failed install step as such, with its reason, and reflects on it', () => {
    const testing = stateIn(TaskStatus.TASK_STATUS_TESTING);
    const install = { layerKey: 'k', cached: false, duration: undefined, resolved: [], error: 'No matching distribution found for nosuchpkg', log: 'ERROR: ...', refusedHosts: [], sizeBytes: 0 };
    const failedRun = apply(testing, { ...(sampleInput(InputKind.TESTS_FAILED, at(5)) as InputOf<typeof InputKind.TESTS_FAILED>), install });
    expect(failedRun.task.status).toBe(TaskStatus.TASK_STATUS_REFLECTING);
    const [iteration] = failedRun.iterations;
    expect(iteration?.dependencyInstall).toEqual(install);
    expect(iteration?.error).toMatchObject({ code: IterationErrorCode.DEPENDENCY_INSTALL_FAILED, message: 'the install step failed, so the tests did not run: No matching distribution found for nosuchpkg' });
  });
});
