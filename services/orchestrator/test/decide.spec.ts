import { describe, expect, it } from '@jest/globals';
import { ApprovalDecision, ApprovalKind, LogLevel, Phase, StopReason, TaskStatus } from '@ratchet/contracts';
import { decide } from '../src/domain/decide';
import { InputKind, type InputOf, type TaskInput } from '../src/domain/inputs';
import { IterationErrorCode } from '../src/domain/iteration-errors';
import type { TaskState } from '../src/domain/records';
import { at, finding, iteration, pendingGate, plan, policy, question, reflection, report, sampleInput, stateIn, task, usage } from './fixtures';

/** Applies inputs in turn, as the effect runner would, and returns every state. */
function run(state: TaskState, inputs: readonly TaskInput[], loopPolicy = policy): TaskState[] {
  const states = [state];
  for (const input of inputs) {
    const current = states.at(-1) as TaskState;
    const decision = decide(current, input, loopPolicy);
    const changed = new Map(decision.iterations.map((item) => [item.number, item]));
    states.push({ task: decision.task, iterations: [...current.iterations.filter((item) => !changed.has(item.number)), ...changed.values()].sort((a, b) => a.number - b.number) });
  }
  return states;
}

const failed = (signature: string, when: number): TaskInput[] => [
  { kind: InputKind.CODED, at: at(when), startedAt: at(when - 1), usage: usage(5), files: [{ path: 'calc.py', content: 'x' }], summary: 's', disputes: [] },
  sampleInput(InputKind.SAFETY_PASSED, at(when + 1)),
  sampleInput(InputKind.TESTS_FAILED, at(when + 2)),
  { ...(sampleInput(InputKind.REFLECTED, at(when + 3)) as Extract<TaskInput, { kind: 'reflected' }>), reflection: reflection(signature) },
];

describe('decide: the loop', () => {
  it('keeps the first plan\'s baseline on the task, says what failed before, and judges the test summary against it', () => {
    const baseline = { ...report(1, 3) };
    const planned = run({ task: task(), iterations: [] }, [
      sampleInput(InputKind.START, at(1)),
      sampleInput(InputKind.LESSONS_RETRIEVED, at(2)),
      { ...(sampleInput(InputKind.PLANNED, at(3)) as InputOf<'planned'>), baseline },
    ]).at(-1) as TaskState;
    expect(planned.task.baselineReport).toEqual(baseline);
    const decision = decide({ ...planned, task: { ...planned.task, status: TaskStatus.TASK_STATUS_PLANNING } }, { ...(sampleInput(InputKind.PLANNED, at(4)) as InputOf<'planned'>), baseline: report(3, 3) }, policy);
    // A later plan never replaces the baseline.
    expect(decision.task.baselineReport).toEqual(baseline);
    const events = decide(run({ task: task(), iterations: [] }, [sampleInput(InputKind.START, at(1)), sampleInput(InputKind.LESSONS_RETRIEVED, at(2))]).at(-1) as TaskState, { ...(sampleInput(InputKind.PLANNED, at(3)) as InputOf<'planned'>), baseline }, policy).events;
    expect(events.map((event) => (event.payload?.$case === 'logLine' ? event.payload.logLine.message : ''))).toContain(
      'baseline: before any change 2 of 3 test(s) fail (tests/test_calc.py::test_1, tests/test_calc.py::test_2); a change must fix what the goal is about and break nothing else',
    );
    const coded = run(planned, [sampleInput(InputKind.CODED, at(5)), sampleInput(InputKind.SAFETY_PASSED, at(6)), sampleInput(InputKind.TESTS_WRITTEN, at(7))]).at(-1) as TaskState;
    const tested = decide(coded, { ...(sampleInput(InputKind.TESTS_PASSED, at(8)) as InputOf<'tests-passed'>), report: report(2, 3) }, policy);
    const summaries = tested.events.map((event) => (event.payload?.$case === 'phaseCompleted' ? event.payload.phaseCompleted.summary : '')).filter((text) => text !== '');
    expect(summaries).toEqual(['2/3 tests passed; fixed 1: tests/test_calc.py::test_1; 1 pre-existing failure(s), failing before the change too: tests/test_calc.py::test_2']);
  });

  it('takes a task from QUEUED to SUCCEEDED, with the iteration phase derived from the status', () => {
    const states = run({ task: task(), iterations: [] }, [
      sampleInput(InputKind.START, at(1)),
      sampleInput(InputKind.LESSONS_RETRIEVED, at(2)),
      sampleInput(InputKind.PLANNED, at(3)),
      sampleInput(InputKind.TESTS_WRITTEN, at(4)),
    ].slice(0, 3));
    const planned = states.at(-1) as TaskState;
    expect(planned.task).toMatchObject({ status: TaskStatus.TASK_STATUS_CODING, currentIteration: 1, plan, startedAt: at(1), usage: usage(10) });
    expect(planned.iterations).toEqual([expect.objectContaining({ number: 1, phase: Phase.PHASE_CODING, startedAt: at(3), usage: usage(10) })]);
    const done = run(planned, [sampleInput(InputKind.CODED, at(4)), sampleInput(InputKind.SAFETY_PASSED, at(5)), sampleInput(InputKind.TESTS_WRITTEN, at(6)), sampleInput(InputKind.TESTS_PASSED, at(7)), sampleInput(InputKind.LEARNED, at(8))]);
    expect(done.map((state) => state.task.status)).toEqual([
      TaskStatus.TASK_STATUS_CODING,
      TaskStatus.TASK_STATUS_SAFETY_CHECK,
      TaskStatus.TASK_STATUS_TESTING,
      TaskStatus.TASK_STATUS_TESTING,
      TaskStatus.TASK_STATUS_LEARNING,
      TaskStatus.TASK_STATUS_SUCCEEDED,
    ]);
    expect(done.map((state) => state.iterations[0]?.phase)).toEqual([Phase.PHASE_CODING, Phase.PHASE_SAFETY_CHECK, Phase.PHASE_TESTING, Phase.PHASE_TESTING, Phase.PHASE_LEARNING, Phase.PHASE_LEARNING]);
    const last = done.at(-1) as TaskState;
    expect(last.task).toMatchObject({ stopReason: StopReason.STOP_REASON_TESTS_PASSED, statusReason: '3/3 tests in iteration 1', completedAt: at(8) });
    expect(last.task.resultFiles.map((file) => file.path)).toEqual(['calc.py', 'tests/test_calc.py']);
    expect(last.task.usage.promptTokens).toBe(30);
  });

  it('keeps tool steps on the iteration while CODING, each an event, and the code that follows keeps them', () => {
    const planned = run({ task: task(), iterations: [] }, [sampleInput(InputKind.START, at(1)), sampleInput(InputKind.LESSONS_RETRIEVED, at(2)), sampleInput(InputKind.PLANNED, at(3))]).at(-1) as TaskState;
    const step = sampleInput(InputKind.TOOL_STEP, at(4)) as Extract<TaskInput, { kind: 'tool-step' }>;
    const decision = decide(planned, step, policy);
    expect(decision.task.status).toBe(TaskStatus.TASK_STATUS_CODING);
    expect(decision.changed).toBe(true);
    expect(decision.events.map((event) => event.payload?.$case)).toEqual(['toolCalled']);
    expect(decision.events[0]?.iteration).toBe(1);
    const states = run(planned, [step, { ...step, step: { ...step.step, number: 2, tool: 'run' } }, sampleInput(InputKind.CODED, at(5))]);
    expect((states.at(-1) as TaskState).iterations[0]?.toolSteps.map((item) => `${item.number}:${item.tool}`)).toEqual(['1:read_file', '2:run']);
    expect((states.at(-1) as TaskState).task.status).toBe(TaskStatus.TASK_STATUS_SAFETY_CHECK);
  });

  it("shows the planner's lookups as events of the planning phase, kept off the iteration's coder steps", () => {
    const retrieved = run({ task: task(), iterations: [] }, [sampleInput(InputKind.START, at(1)), sampleInput(InputKind.LESSONS_RETRIEVED, at(2))]).at(-1) as TaskState;
    const lookup = (sampleInput(InputKind.TOOL_STEP, at(3)) as Extract<TaskInput, { kind: 'tool-step' }>).step;
    const decision = decide(retrieved, { ...(sampleInput(InputKind.PLANNED, at(3)) as InputOf<'planned'>), lookups: [lookup, { ...lookup, number: 2, tool: 'search' }] }, policy);
    expect(decision.events.map((event) => event.payload?.$case).slice(0, 3)).toEqual(['toolCalled', 'toolCalled', 'phaseCompleted']);
    expect(decision.events.slice(0, 2).map((event) => (event.payload?.$case === 'toolCalled' ? [event.payload.toolCalled.phase, event.payload.toolCalled.step?.tool] : undefined))).toEqual([
      [Phase.PHASE_PLANNING, 'read_file'],
      [Phase.PHASE_PLANNING, 'search'],
    ]);
    expect(decision.iterations[0]?.toolSteps).toEqual([]);
  });

  it('waits on a command gate with the change so far, and goes on coding from it once a person decides', () => {
    const planned = run({ task: task(), iterations: [] }, [sampleInput(InputKind.START, at(1)), sampleInput(InputKind.LESSONS_RETRIEVED, at(2)), sampleInput(InputKind.PLANNED, at(3))]).at(-1) as TaskState;
    const asked = run(planned, [sampleInput(InputKind.COMMAND_ASKED, at(4))]).at(-1) as TaskState;
    expect(asked.task).toMatchObject({ status: TaskStatus.TASK_STATUS_AWAITING_APPROVAL, pendingGateId: 'gate-cmd' });
    expect(asked.iterations[0]?.files).toEqual([{ path: 'calc.py', content: 'x = 1\n' }]);
    const raised = decide(planned, sampleInput(InputKind.COMMAND_ASKED, at(4)), policy);
    expect(raised.gate).toMatchObject({ kind: ApprovalKind.APPROVAL_KIND_COMMAND_EXECUTION, detail: 'pip install requests' });
    const gate = { ...(raised.gate as NonNullable<typeof raised.gate>), approver: 'ana', comment: 'ok once', decidedAt: at(5) };
    const approved = decide(asked, { kind: InputKind.APPROVED, at: at(5), gate }, policy);
    expect(approved.task).toMatchObject({ status: TaskStatus.TASK_STATUS_CODING, pendingGateId: '', commandDecisions: [{ commandLine: 'pip install requests', approved: true, comment: 'ok once' }] });
    const refused = decide(asked, { kind: InputKind.REJECTED, at: at(5), gate }, policy);
    expect(refused.task).toMatchObject({ status: TaskStatus.TASK_STATUS_CODING, commandDecisions: [{ approved: false }] });
  });

  it('stores written tests without a status change, and rewrites them after a re-plan', () => {
    const testing = stateIn(TaskStatus.TASK_STATUS_TESTING, { generatedTests: [] });
    const decision = decide(testing, sampleInput(InputKind.TESTS_WRITTEN), policy);
    expect(decision.task.status).toBe(TaskStatus.TASK_STATUS_TESTING);
    expect(decision.events.map((event) => event.payload?.$case)).toEqual(['logLine']);
    expect(decision.task.generatedTests).toHaveLength(1);
    const replanned = decide(stateIn(TaskStatus.TASK_STATUS_PLANNING), sampleInput(InputKind.PLANNED), policy);
    expect(replanned.task.generatedTests).toEqual([]);
    expect(replanned.task.currentIteration).toBe(2);
    // The new iteration starts from the last one's files.
    expect(replanned.iterations).toEqual([expect.objectContaining({ number: 2, files: iteration(1).files })]);
  });

  it('sends a tester that wrote no tests to the reflector instead of asking forever', () => {
    const decision = decide(stateIn(TaskStatus.TASK_STATUS_TESTING, { generatedTests: [] }), { ...(sampleInput(InputKind.TESTS_WRITTEN) as Extract<TaskInput, { kind: 'tests-written' }>), tests: [] }, policy);
    expect(decision.task.status).toBe(TaskStatus.TASK_STATUS_REFLECTING);
    expect(decision.iterations[0]?.error?.code).toBe(IterationErrorCode.MODEL_REPLY_INVALID);
  });

  it('records why an attempt failed: blocked code, bad tests, invalid replies, failing and timed-out runs', () => {
    const blocked = decide(stateIn(TaskStatus.TASK_STATUS_SAFETY_CHECK), sampleInput(InputKind.SAFETY_BLOCKED), policy);
    expect(blocked.iterations[0]).toMatchObject({ phase: Phase.PHASE_REFLECTING, error: { code: IterationErrorCode.SAFETY_BLOCKED, message: 'the safety check blocked the code: py-eval at calc.py:2' } });
    expect(blocked.events.map((event) => event.payload?.$case)).toEqual(['safetyBlocked', 'phaseCompleted', 'taskStatusChanged', 'phaseStarted']);
    const unparseable = decide(stateIn(TaskStatus.TASK_STATUS_TESTING), sampleInput(InputKind.TESTS_REJECTED), policy);
    expect(unparseable.task.statusReason).toBe('generated tests do not parse');
    // The stored tests are dropped, so the tester writes them again.
    expect(unparseable.task.generatedTests).toEqual([]);
    expect(unparseable.iterations[0]?.error?.code).toBe(IterationErrorCode.TESTS_UNPARSEABLE);
    const invalid = decide(stateIn(TaskStatus.TASK_STATUS_CODING), sampleInput(InputKind.REPLY_INVALID), policy);
    expect(invalid.task.statusReason).toBe('the coding reply was invalid');
    // The rejected reply and its repair round count against the budget.
    expect(invalid.task.usage).toEqual(usage(7));
    expect(invalid.iterations[0]?.usage).toEqual(usage(7));
    const cut = decide(stateIn(TaskStatus.TASK_STATUS_CODING), { ...(sampleInput(InputKind.REPLY_INVALID) as Extract<TaskInput, { kind: 'reply-invalid' }>), truncated: true }, policy);
    expect(cut.task.statusReason).toBe('the coding reply was cut off at the length limit');
    expect(cut.iterations[0]?.error).toMatchObject({ code: IterationErrorCode.MODEL_REPLY_INVALID, detail: 'truncated' });
    const timedOut = decide(stateIn(TaskStatus.TASK_STATUS_TESTING), { ...(sampleInput(InputKind.TESTS_FAILED) as Extract<TaskInput, { kind: 'tests-failed' }>), timedOut: true }, policy);
    expect(timedOut.task.statusReason).toBe('the test run timed out');
    expect(timedOut.iterations[0]).toMatchObject({ testReport: report(1, 3), error: { code: IterationErrorCode.TESTS_FAILED } });
  });

  it("takes Bandit's scan in the test job as the safety check: a block ends the testing phase at the reflector, other findings join the iteration's", () => {
    const blockedInput = { ...(sampleInput(InputKind.SAFETY_BLOCKED) as Extract<TaskInput, { kind: 'safety-blocked' }>), phase: Phase.PHASE_TESTING };
    const blocked = decide(stateIn(TaskStatus.TASK_STATUS_TESTING), blockedInput, policy);
    expect(blocked.task.status).toBe(TaskStatus.TASK_STATUS_REFLECTING);
    expect(blocked.iterations[0]).toMatchObject({ error: { code: IterationErrorCode.SAFETY_BLOCKED }, safetyFindings: blockedInput.findings });
    const completed = blocked.events.find((event) => event.payload?.$case === 'phaseCompleted');
    expect(completed?.payload?.$case === 'phaseCompleted' && completed.payload.phaseCompleted.phase).toBe(Phase.PHASE_TESTING);
    const warned = { ...(sampleInput(InputKind.TESTS_FAILED) as Extract<TaskInput, { kind: 'tests-failed' }>), safetyFindings: blockedInput.findings };
    expect(decide(stateIn(TaskStatus.TASK_STATUS_TESTING), warned, policy).iterations[0]?.safetyFindings).toEqual(blockedInput.findings);
    // Without a scan in the test job, the safety check's findings stay.
    const plain = decide(stateIn(TaskStatus.TASK_STATUS_TESTING, {}, [iteration(1, { safetyFindings: blockedInput.findings })]), sampleInput(InputKind.TESTS_FAILED), policy);
    expect(plain.iterations[0]?.safetyFindings).toEqual(blockedInput.findings);
  });

  it('after a reflection codes again in a new iteration, carrying the files and the lessons used', () => {
    const reflecting = stateIn(TaskStatus.TASK_STATUS_REFLECTING, { lessons: [{ id: 'l1' } as never] }, [iteration(1, { testReport: report(1, 3), error: { code: 'TESTS_FAILED', message: '1/3', retryable: false, signature: '', detail: '' } })]);
    const decision = decide(reflecting, sampleInput(InputKind.REFLECTED, at(9)), policy);
    expect(decision.task).toMatchObject({ status: TaskStatus.TASK_STATUS_CODING, currentIteration: 2, statusReason: 'return a + b' });
    const [finished, next] = decision.iterations;
    expect(finished).toMatchObject({ number: 1, phase: Phase.PHASE_CODING, completedAt: at(9), failureId: 'failure-1', fingerprint: { failingTests: ['tests/test_calc.py::test_1', 'tests/test_calc.py::test_2'] } });
    expect(finished?.error?.signature).toBe(reflection().errorSignature);
    expect(next).toMatchObject({ number: 2, phase: Phase.PHASE_CODING, files: iteration(1).files, retrievedLessonIds: ['l1'] });
    // The reflection's events belong to iteration 1, the move to CODING to iteration 2.
    expect(decision.events.map((event) => [event.payload?.$case, event.iteration])).toEqual([
      ['phaseCompleted', 1],
      ['iterationCompleted', 1],
      ['taskStatusChanged', 2],
      ['phaseStarted', 2],
    ]);
  });

  it('re-plans on the second identical failure, stops on the third, and honours the re-plan limit', () => {
    const coding = stateIn(TaskStatus.TASK_STATUS_CODING);
    const twice = run(coding, [...failed('E: same', 10), ...failed('E: same', 20)]);
    expect((twice.at(-1) as TaskState).task).toMatchObject({ status: TaskStatus.TASK_STATUS_PLANNING, replanCount: 1, replanReason: 'the same failure twice in a row: tests/test_calc.py::test_1: assert -1 == 3 (and 1 more failing test(s))' });
    const thrice = run(twice.at(-1) as TaskState, [sampleInput(InputKind.PLANNED, at(30)), ...failed('E: same', 40)]);
    expect((thrice.at(-1) as TaskState).task).toMatchObject({ status: TaskStatus.TASK_STATUS_FAILED, stopReason: StopReason.STOP_REASON_NO_PROGRESS, statusReason: 'the same failure 3 times in a row: tests/test_calc.py::test_1: assert -1 == 3 (and 1 more failing test(s))' });
    const noReplansLeft = run(coding, [...failed('E: same', 10), ...failed('E: same', 20)], { ...policy, maxReplans: 0 });
    expect((noReplansLeft.at(-1) as TaskState).task).toMatchObject({ status: TaskStatus.TASK_STATUS_FAILED, stopReason: StopReason.STOP_REASON_NO_PROGRESS, statusReason: 'no progress after 0 re-plan(s): the same failure twice in a row: tests/test_calc.py::test_1: assert -1 == 3 (and 1 more failing test(s))' });
    // The thresholds are policy: with re-plan after 3 the second repeat codes on.
    const patient = run(coding, [...failed('E: same', 10), ...failed('E: same', 20)], { ...policy, noProgress: { replanAfter: 3, stopAfter: 4 } });
    expect((patient.at(-1) as TaskState).task.status).toBe(TaskStatus.TASK_STATUS_CODING);
    // Different failures are progress.
    const varied = run(coding, [...failed('E: one', 10), ...failed('E: two', 20)]);
    expect((varied.at(-1) as TaskState).task).toMatchObject({ status: TaskStatus.TASK_STATUS_CODING, currentIteration: 3 });
  });

  it('sends a disputed generated test back to the tester in the same iteration, once, and never an acceptance test', () => {
    const dispute = { path: 'tests/test_calc.py', testName: 'test_add', reason: '2 + 3 is 5' };
    const failedRun = iteration(1, { testReport: report(0, 1), error: { code: 'TESTS_FAILED', message: '0/1', retryable: false, signature: '', detail: '' } });
    const reflecting = stateIn(TaskStatus.TASK_STATUS_REFLECTING, {}, [failedRun]);
    const disputed = { ...(sampleInput(InputKind.REFLECTED) as Extract<TaskInput, { kind: 'reflected' }>), reflection: reflection('E: x', { disputedTests: [dispute] }) };
    const decision = decide(reflecting, disputed, policy);
    expect(decision.task).toMatchObject({ status: TaskStatus.TASK_STATUS_TESTING, currentIteration: 1, replanCount: 0, generatedTests: [], statusReason: 'rewriting disputed test(s): tests/test_calc.py::test_add (2 + 3 is 5)' });
    expect(decision.iterations).toHaveLength(1);
    expect(decision.iterations[0]).toMatchObject({ number: 1, phase: Phase.PHASE_TESTING, reflection: { disputedTests: [dispute] } });
    expect(decision.iterations[0]?.error).toBeUndefined();
    expect(decision.iterations[0]?.completedAt).toBeUndefined();
    // A second dispute in the same iteration is a failure of the code.
    const again = decide({ task: { ...reflecting.task }, iterations: [{ ...failedRun, reflection: reflection('E: x', { disputedTests: [dispute] }) }] }, disputed, policy);
    expect(again.task).toMatchObject({ status: TaskStatus.TASK_STATUS_CODING, currentIteration: 2 });
    // An acceptance test is never disputed away.
    const userTest = stateIn(TaskStatus.TASK_STATUS_REFLECTING, { acceptanceTests: [{ path: 'tests/test_calc.py', content: 'x' }] }, [failedRun]);
    expect(decide(userTest, disputed, policy).task.status).toBe(TaskStatus.TASK_STATUS_CODING);
  });

  it('re-plans when the reflector recommends it, while re-plans are left', () => {
    const reflecting = stateIn(TaskStatus.TASK_STATUS_REFLECTING);
    const recommend = { ...(sampleInput(InputKind.REFLECTED) as Extract<TaskInput, { kind: 'reflected' }>), reflection: reflection('E: x', { replanRecommended: true }) };
    expect(decide(reflecting, recommend, policy).task).toMatchObject({ status: TaskStatus.TASK_STATUS_PLANNING, replanReason: 'the reflector recommends a new plan: add subtracts' });
    expect(decide(stateIn(TaskStatus.TASK_STATUS_REFLECTING, { replanCount: 2 }), recommend, policy).task.status).toBe(TaskStatus.TASK_STATUS_CODING);
  });

  it('ends the task after a reflection when the iteration budget is spent', () => {
    const decision = decide(stateIn(TaskStatus.TASK_STATUS_REFLECTING, { budget: { maxIterations: 1, maxTokens: 0, maxCostUsd: 0, maxWallTime: undefined } }), sampleInput(InputKind.REFLECTED), policy);
    expect(decision.task).toMatchObject({ status: TaskStatus.TASK_STATUS_FAILED, stopReason: StopReason.STOP_REASON_MAX_ITERATIONS, currentIteration: 1 });
    expect(decision.iterations.map((item) => item.number)).toEqual([1]);
  });

  it('raises a final-result gate when the task asks for one, and approval or rejection moves it on', () => {
    const gated = stateIn(TaskStatus.TASK_STATUS_TESTING, { approvalKinds: [ApprovalKind.APPROVAL_KIND_FINAL_RESULT] });
    const waiting = decide(gated, sampleInput(InputKind.TESTS_PASSED, at(7)), policy);
    expect(waiting.task).toMatchObject({ status: TaskStatus.TASK_STATUS_AWAITING_APPROVAL, pendingGateId: 'gate-1' });
    expect(waiting.gate).toMatchObject({ gateId: 'gate-1', iteration: 1, decision: ApprovalDecision.APPROVAL_DECISION_PENDING, requestedAt: at(7) });
    expect(waiting.gate?.detail).toContain('`calc.py`');
    expect(waiting.iterations[0]?.phase).toBe(Phase.PHASE_LEARNING);
    const state = { task: waiting.task, iterations: waiting.iterations };
    const approved = decide(state, { kind: InputKind.APPROVED, at: at(8), gate: pendingGate }, policy);
    expect(approved.task).toMatchObject({ status: TaskStatus.TASK_STATUS_LEARNING, statusReason: 'approved by ann', pendingGateId: '' });
    expect(approved.decidedGate?.decision).toBe(ApprovalDecision.APPROVAL_DECISION_APPROVED);
    const rejected = decide(state, { kind: InputKind.REJECTED, at: at(8), gate: pendingGate }, policy);
    expect(rejected.task).toMatchObject({ status: TaskStatus.TASK_STATUS_PLANNING, replanReason: 'the result was rejected by ann: rename it' });
    expect(rejected.events.map((event) => [event.payload?.$case, event.iteration])).toEqual([
      ['approvalDecided', 1],
      ['taskStatusChanged', 1],
      ['phaseStarted', 1],
    ]);
    expect(() => decide(state, { kind: InputKind.APPROVED, at: at(8), gate: { ...pendingGate, decision: ApprovalDecision.APPROVAL_DECISION_REJECTED } }, policy)).toThrow(/carries the decision/);
  });

  it('resumes a FAILED task into PLANNING with the hint as the re-plan reason and its new budget', () => {
    const failedTask = stateIn(TaskStatus.TASK_STATUS_FAILED, { stopReason: StopReason.STOP_REASON_MAX_ITERATIONS, completedAt: at(5) });
    const decision = decide(failedTask, sampleInput(InputKind.RESUMED, at(6)), policy);
    expect(decision.task).toMatchObject({ status: TaskStatus.TASK_STATUS_PLANNING, stopReason: StopReason.STOP_REASON_UNSPECIFIED, replanReason: 'resumed by the user: try a dict', budget: { maxIterations: 5 } });
    expect(decision.task.completedAt).toBeUndefined();
  });

  it('finishes with the reason of the input: a stop condition, an error, a cancel', () => {
    const coding = stateIn(TaskStatus.TASK_STATUS_CODING);
    expect(decide(coding, sampleInput(InputKind.STOPPED), policy).task).toMatchObject({ status: TaskStatus.TASK_STATUS_FAILED, stopReason: StopReason.STOP_REASON_TOKEN_BUDGET, statusReason: 'used 10 of 10 tokens' });
    expect(decide(coding, sampleInput(InputKind.ERRORED), policy).task).toMatchObject({ stopReason: StopReason.STOP_REASON_ERROR, statusReason: 'CODING failed: UNAVAILABLE: memory is down' });
    const cancelled = decide(coding, sampleInput(InputKind.CANCELLED, at(9)), policy);
    expect(cancelled.task).toMatchObject({ status: TaskStatus.TASK_STATUS_CANCELLED, stopReason: StopReason.STOP_REASON_CANCELLED });
    expect(cancelled.events.at(-1)?.payload).toMatchObject({ $case: 'taskCompleted', taskCompleted: { iterations: 1, duration: { seconds: 9, nanos: 0 } } });
  });

  it('records a pause as a warning naming what is unavailable and until when, changing nothing else', () => {
    const retrieving = stateIn(TaskStatus.TASK_STATUS_RETRIEVING, { statusReason: 'as before' });
    const decision = decide(retrieving, sampleInput(InputKind.PAUSED, at(2)), policy);
    expect(decision.changed).toBe(true);
    expect(decision.task).toEqual({ ...retrieving.task, updatedAt: at(2) });
    expect(decision.iterations).toEqual([]);
    expect(decision.events).toEqual([
      {
        time: at(2),
        iteration: 1,
        payload: {
          $case: 'logLine',
          logLine: {
            level: LogLevel.LOG_LEVEL_WARN,
            message: 'memory service unavailable for 1.5s: no responders on ratchet.v1.MemoryService.RetrieveLessons; RETRIEVING waits and tries again in 2s (gives up in 4m59s)',
            service: 'orchestrator',
            attributes: { dependency: 'memory', code: 'UNAVAILABLE', waited_ms: '1500', retry_in_ms: '2000', until: at(300.5).toISOString() },
          },
        },
      },
    ]);
    // The first pause has waited nothing yet; a database outage is named as such.
    const database = { ...(sampleInput(InputKind.PAUSED, at(2)) as Extract<TaskInput, { kind: 'paused' }>), dependency: 'database', waitedMs: 0, message: 'timeout exceeded when trying to connect' };
    expect(decide(stateIn(TaskStatus.TASK_STATUS_TESTING), database, policy).events[0]?.payload).toMatchObject({ logLine: { message: expect.stringMatching(/^database unavailable: timeout exceeded when trying to connect; TESTING waits/) } });
  });

  it('routes through the optional phases the task runs', () => {
    const phases = { reprompt: true, questions: true, review: true, audit: true };
    const all = (status: TaskStatus) => ({ ...stateIn(status), task: { ...stateIn(status).task, phases } });
    expect(decide({ task: task({ phases }), iterations: [] }, sampleInput(InputKind.START), policy).task.status).toBe(TaskStatus.TASK_STATUS_REPROMPTING);
    // The configured defaults apply at submit; a task's own phases decide afterwards.
    expect(decide({ task: task(), iterations: [] }, sampleInput(InputKind.START), { ...policy, phases }).task.status).toBe(TaskStatus.TASK_STATUS_RETRIEVING);
    expect(decide(all(TaskStatus.TASK_STATUS_SAFETY_CHECK), sampleInput(InputKind.SAFETY_PASSED), policy).task.status).toBe(TaskStatus.TASK_STATUS_REVIEWING);
    expect(decide(all(TaskStatus.TASK_STATUS_REVIEWING), sampleInput(InputKind.REVIEWED), policy).task.status).toBe(TaskStatus.TASK_STATUS_AUDITING);
    expect(decide(all(TaskStatus.TASK_STATUS_AUDITING), sampleInput(InputKind.AUDITED), policy).task.status).toBe(TaskStatus.TASK_STATUS_TESTING);
  });

  it('keeps the spec and the questions on the task, and waits until every question is answered', () => {
    const reprompted = decide(stateIn(TaskStatus.TASK_STATUS_REPROMPTING), sampleInput(InputKind.REPROMPTED), policy);
    expect(reprompted.task).toMatchObject({ status: TaskStatus.TASK_STATUS_RETRIEVING, spec: { acceptanceCriteria: ['add then list shows the item'] } });
    const second = { ...question, questionId: 'q2', question: 'One file or many?' };
    const asked = decide(stateIn(TaskStatus.TASK_STATUS_REPROMPTING), { ...(sampleInput(InputKind.QUESTION_ASKED) as InputOf<'question-asked'>), questions: [question, second] }, { ...policy, questions: { ...policy.questions, timeoutMs: 60_000 } });
    expect(asked.task).toMatchObject({ status: TaskStatus.TASK_STATUS_AWAITING_ANSWER, answerDeadline: new Date(at(2).getTime() + 60_000) });
    expect(asked.task.statusReason).toContain('JSON or CSV? / One file or many?');
    expect(asked.events.map((item) => item.payload?.$case)).toContain('questionsAsked');
    const waiting = { task: { ...asked.task, version: 2 }, iterations: [] };
    const half = decide(waiting, sampleInput(InputKind.ANSWERED, at(3)), policy);
    expect(half.task.status).toBe(TaskStatus.TASK_STATUS_AWAITING_ANSWER);
    expect(half.task.questions.map((item) => [item.questionId, item.answer, item.answeredBy])).toEqual([
      ['q1', 'JSON', 'ada'],
      ['q2', '', ''],
    ]);
    const done = decide({ task: half.task, iterations: [] }, { kind: InputKind.ANSWERED, at: at(4), answers: [{ questionId: 'q2', answer: '' }], answeredBy: 'assumption' }, policy);
    expect(done.task).toMatchObject({ status: TaskStatus.TASK_STATUS_REPROMPTING, answerDeadline: undefined, statusReason: expect.stringContaining('stated assumptions') });
    expect(done.task.questions[1]).toMatchObject({ answeredBy: 'assumption', answeredAt: at(4) });
  });

  it('numbers the questions itself and keeps only as many as the task may still be asked', () => {
    const reply = (questionId: string, text: string) => ({ ...question, questionId, question: text });
    const ask = (state: ReturnType<typeof stateIn>, questions: (typeof question)[]) =>
      decide(state, { ...(sampleInput(InputKind.QUESTION_ASKED) as InputOf<'question-asked'>), questions }, policy);
    // The reprompter left one id empty and repeated another: each gets a fresh q<n>.
    const first = ask(stateIn(TaskStatus.TASK_STATUS_REPROMPTING), [reply('', 'JSON or CSV?'), reply('format', 'Tabs or spaces?')]);
    expect(first.task.questions.map((item) => item.questionId)).toEqual(['q1', 'format']);
    // A second round: the repeated id and the empty one are renumbered after the two asked; policy.questions.max (3) keeps one.
    const again = { task: { ...first.task, status: TaskStatus.TASK_STATUS_REPROMPTING, version: 2 }, iterations: [] };
    const second = ask(again, [reply('format', 'One file or many?'), reply('', 'Sorted?')]);
    expect(second.task.questions.map((item) => [item.questionId, item.question])).toEqual([
      ['q1', 'JSON or CSV?'],
      ['format', 'Tabs or spaces?'],
      ['q3', 'One file or many?'],
    ]);
    const asked = second.events.find((item) => item.payload?.$case === 'questionsAsked');
    expect(asked?.payload?.$case === 'questionsAsked' && asked.payload.questionsAsked.questions.map((item) => item.questionId)).toEqual(['q3']);
    // The same reply always becomes the same questions: decide is all there is to it.
    expect(ask(again, [reply('format', 'One file or many?'), reply('', 'Sorted?')]).task.questions).toEqual(second.task.questions);
  });

  it('fails an attempt on blocking review and audit findings, and records the rest', () => {
    const phases = { reprompt: false, questions: true, review: true, audit: true };
    const reviewing = { ...stateIn(TaskStatus.TASK_STATUS_REVIEWING), task: { ...stateIn(TaskStatus.TASK_STATUS_REVIEWING).task, phases } };
    const blocked = decide(reviewing, { ...(sampleInput(InputKind.REVIEWED) as InputOf<'reviewed'>), findings: [finding(), finding({ blocking: false, message: 'name it better' })] }, policy);
    expect(blocked.task.status).toBe(TaskStatus.TASK_STATUS_REFLECTING);
    expect(blocked.iterations[0]?.reviewFindings).toHaveLength(2);
    expect(blocked.iterations[0]?.error).toMatchObject({ code: IterationErrorCode.REVIEW_REJECTED, message: 'the review blocked the change: calc.py:2: add subtracts' });
    const auditing = { ...reviewing, task: { ...reviewing.task, status: TaskStatus.TASK_STATUS_AUDITING } };
    const audited = decide(auditing, { ...(sampleInput(InputKind.AUDITED) as InputOf<'audited'>), findings: [finding({ cwe: 'CWE-89', message: 'SQL built from input', source: 'auditor' })] }, policy);
    expect(audited.iterations[0]?.error).toMatchObject({ code: IterationErrorCode.AUDIT_FINDINGS, message: 'the security audit blocked the change: calc.py:2: SQL built from input (CWE-89)' });
    // An audit reply that cannot be used fails the attempt: unaudited code never reaches the tests.
    expect(decide(auditing, { ...(sampleInput(InputKind.REPLY_INVALID) as InputOf<'reply-invalid'>), phase: Phase.PHASE_AUDITING }, policy).task.status).toBe(TaskStatus.TASK_STATUS_REFLECTING);
  });

  it('never changes the records it is given', () => {
    const state = stateIn(TaskStatus.TASK_STATUS_REFLECTING);
    const copy = structuredClone(state);
    decide(state, sampleInput(InputKind.REFLECTED), policy);
    expect(state).toEqual(copy);
  });
});
