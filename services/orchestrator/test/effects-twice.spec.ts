import { describe, expect, it } from '@jest/globals';
import {
  CoderServiceDefinition,
  MemoryServiceDefinition,
  PlannerServiceDefinition,
  ReflectorServiceDefinition,
  SafetyServiceDefinition,
  TaskStatus,
  TesterServiceDefinition,
} from '@ratchet/contracts';
import { Effect } from '../src/domain/next-action';
import { emptyUsage, type TaskState } from '../src/domain/records';
import { phaseRunners, type AgentClients, type PhaseRunner } from '../src/runner/phases';
import { iteration, phaseSettings, plan, reflection, report, spec, stateIn } from './fixtures';

// Every effect, run twice on the same stored state (as after a lost save or a
// replica taking the task over), must write once wherever it writes: each call
// that changes something at its receiver carries an idempotency key, the same
// on both runs, which the receiver deduplicates on (memory's side:
// services/memory/test/idempotent-records.spec.ts). The clients are built from
// the contracts' own service definitions, so every method of every service is
// recorded, not only the ones this test knows about.

/** Methods that change something at the receiver; every other method of the loop's services only reads or asks a model. */
const writes = new Set(['MemoryService.RetrieveLessons', 'MemoryService.RecordFailure', 'MemoryService.RecordSuccess', 'MemoryService.ImportLessons', 'MemoryService.ForgetLesson', 'MemoryService.ReindexLessons']);

interface Call {
  readonly method: string;
  readonly request: Record<string, unknown>;
}

type Definition = { readonly name: string; readonly methods: Record<string, { readonly name: string; readonly responseType: { fromPartial(value: object): unknown } }> };

/** Answers for the methods whose empty answer a phase refuses (a plan, code, a reflection...). */
const answers: Record<string, object> = {
  'PlannerService.CreatePlan': { plan },
  'PlannerService.Reprompt': { spec },
  'CoderService.WriteCode': { files: [{ path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' }], summary: 'fixed add' },
  'TesterService.WriteTests': { tests: [{ path: 'tests/test_calc.py', content: 'from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n' }] },
  'TesterService.RunTests': { report: report(0, 1) },
  'ReflectorService.Reflect': { reflection: reflection('E: x') },
  'MemoryService.RecordFailure': { failureId: 'failure-1' },
  'MemoryService.RecordSuccess': { successId: 'success-1' },
};

function recordingClients(calls: Call[]): AgentClients {
  const client = (definition: Definition) =>
    Object.fromEntries(
      Object.entries(definition.methods).map(([key, method]) => {
        const name = `${definition.name}.${method.name}`;
        return [
          key,
          async (request: Record<string, unknown>) => {
            calls.push({ method: name, request });
            return method.responseType.fromPartial(answers[name] ?? {});
          },
        ];
      }),
    );
  return {
    planner: client(PlannerServiceDefinition),
    coder: client(CoderServiceDefinition),
    tester: client(TesterServiceDefinition),
    reflector: client(ReflectorServiceDefinition),
    safety: client(SafetyServiceDefinition),
    memory: client(MemoryServiceDefinition),
  } as unknown as AgentClients;
}

/** A stored state each effect runs on: the task in the phase that effect belongs to. */
const states: Record<Effect, TaskState> = {
  [Effect.REPROMPT]: stateIn(TaskStatus.TASK_STATUS_REPROMPTING, { currentIteration: 0, plan: undefined, phases: { reprompt: true, questions: true, review: false, audit: false } }, []),
  [Effect.RETRIEVE]: stateIn(TaskStatus.TASK_STATUS_RETRIEVING, { currentIteration: 0, plan: undefined }, []),
  [Effect.BASELINE]: stateIn(TaskStatus.TASK_STATUS_PLANNING, { currentIteration: 0, plan: undefined, workspace: [{ path: 'calc.py', content: 'x = 1\n' }] }, []),
  [Effect.PLAN]: stateIn(TaskStatus.TASK_STATUS_PLANNING, { currentIteration: 0, plan: undefined }, []),
  [Effect.JUDGE_PACKAGES]: stateIn(TaskStatus.TASK_STATUS_PLANNING, { currentIteration: 0, unjudgedPlan: { usage: emptyUsage() } }, []),
  [Effect.CODE]: stateIn(TaskStatus.TASK_STATUS_CODING),
  [Effect.CHECK_SAFETY]: stateIn(TaskStatus.TASK_STATUS_SAFETY_CHECK),
  [Effect.REVIEW]: stateIn(TaskStatus.TASK_STATUS_REVIEWING, { phases: { reprompt: false, questions: true, review: true, audit: false } }),
  [Effect.AUDIT]: stateIn(TaskStatus.TASK_STATUS_AUDITING, { phases: { reprompt: false, questions: true, review: false, audit: true } }),
  [Effect.WRITE_TESTS]: stateIn(TaskStatus.TASK_STATUS_TESTING, { generatedTests: [] }),
  [Effect.RUN_TESTS]: stateIn(TaskStatus.TASK_STATUS_TESTING),
  [Effect.REFLECT]: stateIn(TaskStatus.TASK_STATUS_REFLECTING, { currentIteration: 2 }, [iteration(1), iteration(2, { testReport: report(1, 3) })]),
  [Effect.LEARN]: stateIn(TaskStatus.TASK_STATUS_LEARNING, { currentIteration: 2 }, [iteration(1, { testReport: report(1, 3) }), iteration(2, { testReport: report(3, 3) })]),
};

const run = (runner: PhaseRunner | undefined, state: TaskState) => (runner as PhaseRunner)(state, new AbortController().signal, { enteredAt: new Date(0), progress: async () => undefined });

describe('every effect run twice on the same state', () => {
  it.each(Object.values(Effect))('%s: each call that writes carries the same idempotency key on both runs', async (effect) => {
    const calls: Call[] = [];
    const runners = phaseRunners(recordingClients(calls), phaseSettings, () => new Date(0));
    await run(runners[effect], states[effect]);
    const first = calls.length;
    await run(runners[effect], states[effect]);
    const [once, again] = [calls.slice(0, first), calls.slice(first)];
    // The same calls both times, in the same order: a repeat is a repeat, not a different run.
    expect(again.map((call) => call.method)).toEqual(once.map((call) => call.method));
    for (const [index, call] of once.entries()) {
      if (!writes.has(call.method)) continue;
      const key = call.request['idempotencyKey'];
      expect({ method: call.method, key }).toEqual({ method: call.method, key: expect.stringMatching(/^task-1:\d+:/) });
      expect(again[index]?.request['idempotencyKey']).toBe(key);
    }
  });

  it('has a state for every effect, so a new effect is checked too', () => {
    expect(Object.keys(states).sort()).toEqual(Object.values(Effect).sort());
  });
});
