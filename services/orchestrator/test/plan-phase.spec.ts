import { describe, expect, it } from '@jest/globals';
import { DependencyVerdict, Language, Lesson, SandboxJobResult, TaskStatus, type CheckDependenciesRequest, type CreatePlanRequest, type RunTestsRequest, type RunTestsResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { InputKind } from '../src/domain/inputs';
import { decide } from '../src/domain/decide';
import { Effect, nextAction } from '../src/domain/next-action';
import type { TaskState } from '../src/domain/records';
import { phaseRunners, type AgentClients, type PhaseRunner } from '../src/runner/phases';
import { iteration, phaseSettings, plan, policy, reflection, task } from './fixtures';

// What the PLAN phase sends and when it stops: the lessons a re-plan sees,
// and a workspace whose setup fails ending the task before the planner's call.

const lesson = (id: string, title: string): Lesson => Lesson.fromPartial({ id, title, body: `${title}.`, language: Language.LANGUAGE_PYTHON });

/** Runs the effect the loop runs next for `state` (PLAN, or BASELINE first) with a planner and a tester that record what they were sent. */
async function plan_(state: TaskState, testRun?: Partial<RunTestsResponse>) {
  const next = nextAction(state, policy, new Date(0));
  if (next.kind !== 'run') throw new Error(`nothing runs next: ${next.kind}`);
  const plans: CreatePlanRequest[] = [];
  const runs: RunTestsRequest[] = [];
  const planner = {
    createPlan: async (request: CreatePlanRequest) => {
      plans.push(request);
      return { plan, usage: undefined, replyFailure: undefined };
    },
  };
  const tester = {
    runTests: async (request: RunTestsRequest) => {
      runs.push(request);
      return { report: undefined, result: undefined, passed: false, ...testRun };
    },
  };
  const runners = phaseRunners({ planner, coder: {}, tester, reflector: {}, safety: {}, memory: {} } as unknown as AgentClients, phaseSettings, () => new Date(0));
  const input = await (runners[next.effect] as PhaseRunner)(state, new AbortController().signal, { enteredAt: new Date(0), progress: async () => undefined });
  return { input, plans, runs };
}

describe('the PLAN phase', () => {
  it('gives a re-plan the lessons the reflector was shown for the failure, besides the task\'s own, each once', async () => {
    const own = lesson('lesson-own', 'Check the operator first');
    const seen = lesson('lesson-seen', 'Round half to even with decimal');
    const state: TaskState = {
      task: task({ status: TaskStatus.TASK_STATUS_PLANNING, currentIteration: 1, plan, lessons: [own], replanReason: 'the reflector recommended a new plan' }),
      iterations: [iteration(1, { reflection: reflection(), reflectionLessons: [seen, own] })],
    };
    const { plans } = await plan_(state);
    expect(plans[0]?.lessons.map((offered) => offered.id)).toEqual(['lesson-own', 'lesson-seen']);
  });

  it('ends a workspace task whose setup fails before the planner is called, with the reason and the end of its output', async () => {
    const state: TaskState = {
      task: task({
        status: TaskStatus.TASK_STATUS_PLANNING,
        workspace: [{ path: 'shout/__init__.py', content: 'from shout._version import VERSION\n' }],
        acceptanceTests: [{ path: 'tests/test_shout.py', content: 'def test_x():\n    pass\n' }],
        setupCommand: 'python3 tools/make_version.py',
      }),
      iterations: [],
    };
    const setup = { layerKey: 'k', cached: false, duration: undefined, resolved: [], error: 'the setup command "python3 tools/make_version.py" exited with code 2; fix the command', log: "python3: can't open file 'tools/make_version.py'", refusedHosts: [], sizeBytes: 0 };
    expect(nextAction(state, policy, new Date(0))).toEqual({ kind: 'run', effect: Effect.BASELINE });
    const { input, plans, runs } = await plan_(state, { result: SandboxJobResult.fromPartial({ setup }) });
    expect(runs).toHaveLength(1);
    expect(runs[0]?.setupCommand).toBe('python3 tools/make_version.py');
    expect(plans).toHaveLength(0);
    expect(input).toMatchObject({ kind: InputKind.ERRORED, code: 'SETUP_FAILED', message: expect.stringMatching(/exited with code 2; fix the command\nIts output ended with:\npython3: can't open file/) });
  });

  it('runs the baseline as its own step, once: kept even when it gave no report, so a retried plan does not run it again', async () => {
    const state: TaskState = {
      task: task({ status: TaskStatus.TASK_STATUS_PLANNING, workspace: [{ path: 'calc.py', content: 'x = 1\n' }], acceptanceTests: [{ path: 'tests/test_calc.py', content: 'def test_x():\n    pass\n' }] }),
      iterations: [],
    };
    const first = await plan_(state, { result: SandboxJobResult.fromPartial({ exitCode: 2 }) });
    expect(first.plans).toHaveLength(0);
    expect(first.input).toMatchObject({ kind: InputKind.BASELINE_RAN, report: { parsed: false, parseError: 'the baseline run wrote no test report' } });
    const decided = decide(state, first.input, policy);
    expect(decided.task).toMatchObject({ status: TaskStatus.TASK_STATUS_PLANNING, baselineReport: { parsed: false } });
    const second = await plan_({ task: decided.task, iterations: [] });
    expect(second.runs).toHaveLength(0);
    expect(second.plans).toHaveLength(1);
  });

  it('stores a plan that declares packages before they are judged: a check that fails is retried alone, the planner is not asked again, and the iteration counts the plan\'s tokens', async () => {
    const planCalls: CreatePlanRequest[] = [];
    const checks: CheckDependenciesRequest[] = [];
    let safetyUp = false;
    const planner = {
      createPlan: async (request: CreatePlanRequest) => {
        planCalls.push(request);
        return { plan: { ...plan, dependencies: [{ name: 'requests', versionSpec: '>=2' }] }, usage: { promptTokens: 40, completionTokens: 2, costUsd: 0, modelCalls: 1 }, replyFailure: undefined };
      },
    };
    const safety = {
      checkDependencies: async (request: CheckDependenciesRequest) => {
        checks.push(request);
        if (!safetyUp) throw new AppError(ErrorCode.UNAVAILABLE, 'no responders on safety.v1');
        return { verdict: 0, decisions: [{ dependency: { name: 'requests', versionSpec: '>=2' }, verdict: DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED, reason: 'allowlist', installSpec: '>=2', declared: true, importedAt: [], approvedBy: '', provided: false }] };
      },
    };
    const runners = phaseRunners({ planner, coder: {}, tester: {}, reflector: {}, safety, memory: {} } as unknown as AgentClients, phaseSettings, () => new Date(0));
    const runNext = (state: TaskState) => {
      const next = nextAction(state, policy, new Date(0));
      if (next.kind !== 'run') throw new Error(`nothing runs next: ${next.kind}`);
      return { effect: next.effect, input: (runners[next.effect] as PhaseRunner)(state, new AbortController().signal, { enteredAt: new Date(0), progress: async () => undefined }) };
    };
    const planning: TaskState = { task: task({ status: TaskStatus.TASK_STATUS_PLANNING }), iterations: [] };

    const planned = runNext(planning);
    expect(planned.effect).toBe(Effect.PLAN);
    const stored = decide(planning, await planned.input, policy);
    expect(stored.task).toMatchObject({ status: TaskStatus.TASK_STATUS_PLANNING, currentIteration: 0, unjudgedPlan: { usage: { promptTokens: 40 } }, plan: { dependencies: [{ name: 'requests' }] } });
    expect(stored.iterations).toHaveLength(0);

    const failed = runNext({ task: stored.task, iterations: [] });
    expect(failed.effect).toBe(Effect.JUDGE_PACKAGES);
    await expect(failed.input).rejects.toMatchObject({ code: ErrorCode.UNAVAILABLE });
    safetyUp = true;
    const judged = runNext({ task: stored.task, iterations: [] });
    expect(judged.effect).toBe(Effect.JUDGE_PACKAGES);
    const coding = decide({ task: stored.task, iterations: [] }, await judged.input, policy);

    expect(planCalls).toHaveLength(1);
    expect(checks.map((check) => check.dependencies)).toEqual([[{ name: 'requests', versionSpec: '>=2' }], [{ name: 'requests', versionSpec: '>=2' }]]);
    expect(coding.task.status).toBe(TaskStatus.TASK_STATUS_CODING);
    expect(coding.task.unjudgedPlan).toBeUndefined();
    expect(coding.iterations[0]).toMatchObject({ number: 1, usage: { promptTokens: 40, completionTokens: 2 } });
    expect(coding.events.flatMap((event) => (event.payload?.$case === 'logLine' ? [event.payload.logLine.message] : []))).toEqual(["the plan's packages checked: requests (>=2): allowed"]);
  });

  it('goes on to code with no check when the plan declares no package', async () => {
    const planning: TaskState = { task: task({ status: TaskStatus.TASK_STATUS_PLANNING }), iterations: [] };
    const { input } = await plan_(planning);
    const decided = decide(planning, input, policy);
    expect(decided.task).toMatchObject({ status: TaskStatus.TASK_STATUS_CODING, currentIteration: 1 });
    expect(decided.task.unjudgedPlan).toBeUndefined();
  });

  it('plans again on a resume instead of judging a plan left waiting for its check', () => {
    const failed = task({ status: TaskStatus.TASK_STATUS_FAILED, plan, unjudgedPlan: { usage: { promptTokens: 1, completionTokens: 0, costUsd: 0, modelCalls: 1 } } });
    const resumed = decide({ task: failed, iterations: [] }, { kind: InputKind.RESUMED, at: new Date(1), hint: '', budget: failed.budget }, policy);
    expect(resumed.task.unjudgedPlan).toBeUndefined();
    expect(nextAction({ task: resumed.task, iterations: [] }, policy, new Date(1))).toEqual({ kind: 'run', effect: Effect.PLAN });
  });
});
