import { describe, expect, it } from '@jest/globals';
import { ApprovalKind, Language, MemoryUse, PhaseSwitch, TestEdits, type Budget, type SubmitTaskRequest } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { budgetLimits, maxFiles, validateSubmit } from '../src/handlers/validate-submit';

const request = (overrides: Partial<SubmitTaskRequest> = {}): SubmitTaskRequest => ({
  goal: 'make the failing test pass',
  language: Language.LANGUAGE_PYTHON,
  budget: undefined,
  workspace: [],
  dataFiles: [],
  setupCommand: '',
  acceptanceTests: [],
  approvalPolicy: undefined,
  labels: {},
  requestId: '',
  testCommand: [],
  testEdits: TestEdits.TEST_EDITS_UNSPECIFIED,
  project: '',
  memory: MemoryUse.MEMORY_USE_UNSPECIFIED,
  profile: '',
  reprompt: PhaseSwitch.PHASE_SWITCH_UNSPECIFIED,
  questions: PhaseSwitch.PHASE_SWITCH_UNSPECIFIED,
  review: PhaseSwitch.PHASE_SWITCH_UNSPECIFIED,
  audit: PhaseSwitch.PHASE_SWITCH_UNSPECIFIED,
  ...overrides,
});
const files = (count: number) => Array.from({ length: count }, (_, index) => ({ path: `pkg/m${index}.py`, content: 'x = 1\n' }));

describe('validateSubmit', () => {
  it('refuses a phase switch that is not ON, OFF or unset, naming the choices', () => {
    expect(() => validateSubmit(request({ review: 7 as PhaseSwitch }))).toThrow('review is 7; use PHASE_SWITCH_ON or PHASE_SWITCH_OFF (or leave it unset: the configured default)');
  });

  it('takes a workspace as large as the CLI sends by default, and refuses one file more', () => {
    expect(() => validateSubmit(request({ workspace: files(maxFiles) }))).not.toThrow();
    expect(maxFiles).toBe(20_000);
    expect(() => validateSubmit(request({ workspace: files(maxFiles + 1) }))).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('workspace has 20001 files') }));
  });

  it("takes a project's test command with its workspace, and refuses one without a workspace or malformed", () => {
    expect(() => validateSubmit(request({ workspace: files(2), testCommand: ['npm', 'test'] }))).not.toThrow();
    expect(() => validateSubmit(request({ testCommand: ['npm', 'test'] }))).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('test_command needs a workspace') }));
    expect(() => validateSubmit(request({ workspace: files(2), testCommand: [' ', 'test'] }))).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('test_command names no program') }));
  });

  it('refuses a test_edits value it does not know', () => {
    expect(() => validateSubmit(request({ testEdits: TestEdits.TEST_EDITS_ALLOWED }))).not.toThrow();
    expect(() => validateSubmit(request({ testEdits: 7 as TestEdits }))).toThrow(expect.objectContaining({ message: expect.stringContaining('test_edits is 7') }));
  });

  const refusal = (message: string | RegExp) => expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT, message: typeof message === 'string' ? expect.stringContaining(message) : expect.stringMatching(message) });
  const budget = (overrides: Partial<Budget>): Budget => ({ maxIterations: 0, maxTokens: 0, maxCostUsd: 0, maxWallTime: undefined, ...overrides });

  it('refuses a file with a NUL byte, naming the file and saying only text files are taken', () => {
    const binary = { path: 'img/logo.png', content: '\u0089PNG\r\n\u001a\n\u0000\u0000\u0000\rIHDR' };
    expect(() => validateSubmit(request({ workspace: [...files(2), binary] }))).toThrow(refusal('workspace: "img/logo.png" contains a NUL byte (at character 8), so it is not a text file; only text files are accepted'));
    expect(() => validateSubmit(request({ acceptanceTests: [{ path: 'tests/test_x.py', content: 'assert 1\u0000' }] }))).toThrow(refusal('acceptance_tests: "tests/test_x.py" contains a NUL byte'));
  });

  it('refuses a NUL in the goal, request_id or labels, which Postgres cannot store', () => {
    expect(() => validateSubmit(request({ goal: 'add\u0000two' }))).toThrow(refusal('goal contains a NUL character'));
    expect(() => validateSubmit(request({ requestId: 'r\u0000' }))).toThrow(refusal('request_id contains a NUL character'));
    expect(() => validateSubmit(request({ labels: { team: 'a\u0000' } }))).toThrow(refusal('labels: label "team" has a control character in its value; send plain text on one line'));
    expect(() => validateSubmit(request({ labels: { 'te\u0000am': 'a' } }))).toThrow(refusal('labels: label key "te\\u0000am" is not a label name'));
  });

  it('limits labels as Kubernetes does its keys: 32 at most, names of 63, DNS prefixes, values of 256', () => {
    const ok = { team: 'payments', 'ratchet.dev/bench-task': 'HumanEval/0', 'example.com/ticket': 'https://tracker.example.com/T-1', [`k${'x'.repeat(62)}`]: 'v'.repeat(256), empty: '' };
    expect(() => validateSubmit(request({ labels: ok }))).not.toThrow();
    const many = Object.fromEntries(Array.from({ length: 33 }, (_, index) => [`label-${index}`, 'x']));
    expect(() => validateSubmit(request({ labels: many }))).toThrow(refusal('labels has 33 labels; at most 32 are accepted'));
    expect(() => validateSubmit(request({ labels: { [`k${'x'.repeat(63)}`]: 'v' } }))).toThrow(refusal('is not a label name: use at most 63 letters'));
    for (const key of ['', '-team', 'team-', 'te am', 'team/', '/team', 'a/b/c', 'Example.com/team', `${'a'.repeat(254)}/team`]) {
      expect(() => validateSubmit(request({ labels: { [key]: 'v' } }))).toThrow(expect.objectContaining({ code: ErrorCode.INVALID_ARGUMENT }));
    }
    expect(() => validateSubmit(request({ labels: { team: 'v'.repeat(257) } }))).toThrow(refusal('labels: label "team" has a value of 257 characters; at most 256 are accepted'));
    expect(() => validateSubmit(request({ labels: { team: 'v'.repeat(30 * 1024 * 1024) } }))).toThrow(refusal('at most 256 are accepted'));
    expect(() => validateSubmit(request({ labels: { team: 'a\nb' } }))).toThrow(refusal('control character'));
  });

  it('checks every Duration: nanos 0 to 999999999, seconds not negative, and at most 7 days', () => {
    const week = budgetLimits.maxWallTimeSeconds;
    expect(week).toBe(604_800);
    expect(() => validateSubmit(request({ budget: budget({ maxWallTime: { seconds: week, nanos: 0 } }), approvalPolicy: { required: [], timeout: { seconds: week, nanos: 0 } } }))).not.toThrow();
    expect(() => validateSubmit(request({ budget: budget({ maxWallTime: { seconds: 60, nanos: -1 } }) }))).toThrow(refusal('budget.max_wall_time.nanos is -1; use 0 to 999999999'));
    expect(() => validateSubmit(request({ budget: budget({ maxWallTime: { seconds: 60, nanos: 1_000_000_000 } }) }))).toThrow(refusal('budget.max_wall_time.nanos is 1000000000'));
    expect(() => validateSubmit(request({ budget: budget({ maxWallTime: { seconds: -1, nanos: 0 } }) }))).toThrow(refusal('budget.max_wall_time.seconds is -1; use 0 to 604800 seconds (7 days; 0 for the default)'));
    const tenThousandYears = 10_000 * 365.25 * 86_400;
    expect(() => validateSubmit(request({ budget: budget({ maxWallTime: { seconds: tenThousandYears, nanos: 0 } }) }))).toThrow(refusal(`budget.max_wall_time is ${tenThousandYears} seconds; use 0 to 604800 seconds (7 days; 0 for the default)`));
    expect(() => validateSubmit(request({ budget: budget({ maxWallTime: { seconds: week, nanos: 1 } }) }))).toThrow(refusal('budget.max_wall_time is 604800 seconds'));
    expect(() => validateSubmit(request({ approvalPolicy: { required: [], timeout: { seconds: 10, nanos: -5 } } }))).toThrow(refusal('approval_policy.timeout.nanos is -5'));
    expect(() => validateSubmit(request({ approvalPolicy: { required: [], timeout: { seconds: tenThousandYears, nanos: 0 } } }))).toThrow(refusal(`approval_policy.timeout is ${tenThousandYears} seconds; use 0 to 604800 seconds (7 days; 0 for wait forever)`));
  });

  it('bounds the integer and cost budgets, naming the limit', () => {
    expect(() => validateSubmit(request({ budget: budget({ maxIterations: 100, maxTokens: budgetLimits.maxTokens, maxCostUsd: 0.5 }) }))).not.toThrow();
    expect(() => validateSubmit(request({ budget: budget({ maxTokens: Number.MAX_SAFE_INTEGER }) }))).toThrow(refusal('budget.max_tokens is 9007199254740991; use 1 to 1000000000 (0 for the default)'));
    expect(() => validateSubmit(request({ budget: budget({ maxTokens: -1 }) }))).toThrow(refusal('budget.max_tokens is -1'));
    expect(() => validateSubmit(request({ budget: budget({ maxIterations: 101 }) }))).toThrow(refusal('budget.max_iterations is 101; use 1 to 100'));
    expect(() => validateSubmit(request({ budget: budget({ maxCostUsd: Infinity }) }))).toThrow(refusal('budget.max_cost_usd is Infinity; use 0 to 100000 USD'));
    expect(() => validateSubmit(request({ budget: budget({ maxCostUsd: 1e6 }) }))).toThrow(refusal('budget.max_cost_usd is 1000000'));
  });

  it('refuses enum values it does not know, ts-proto UNRECOGNIZED (-1) included, listing the allowed ones', () => {
    expect(() => validateSubmit(request({ language: -1 as Language }))).toThrow(refusal('language is -1; use LANGUAGE_PYTHON, LANGUAGE_TYPESCRIPT or LANGUAGE_JAVASCRIPT'));
    expect(() => validateSubmit(request({ language: Language.LANGUAGE_UNSPECIFIED }))).toThrow(refusal('language is unspecified; use LANGUAGE_PYTHON, LANGUAGE_TYPESCRIPT or LANGUAGE_JAVASCRIPT'));
    expect(() => validateSubmit(request({ language: 9 as Language }))).toThrow(refusal('language is 9'));
    expect(() => validateSubmit(request({ testEdits: -1 as TestEdits }))).toThrow(refusal('test_edits is -1; use TEST_EDITS_PROTECTED or TEST_EDITS_ALLOWED (or leave it unset'));
    expect(() => validateSubmit(request({ memory: -1 as MemoryUse }))).toThrow(refusal('memory is -1; use MEMORY_USE_PROJECT_ONLY or MEMORY_USE_OFF'));
    expect(() => validateSubmit(request({ approvalPolicy: { required: [-1 as ApprovalKind], timeout: undefined } }))).toThrow(refusal('approval_policy.required has -1'));
  });

  it('never echoes a long client string whole', () => {
    const megabyte = 'a'.repeat(1_000_000);
    for (const overrides of [{ workspace: [{ path: megabyte, content: '' }] }, { project: `${megabyte} x` }, { requestId: megabyte }, { goal: megabyte }]) {
      let message = '';
      try {
        validateSubmit(request(overrides));
      } catch (error) {
        message = (error as Error).message;
      }
      expect(message).not.toBe('');
      expect(message.length).toBeLessThan(400);
    }
  });

  it('refuses files inside .git or other repository metadata, in any spelling, and keeps .gitignore and .gitmodules', () => {
    const config = { path: '.git/config', content: '[core]\n\tfsmonitor = touch /tmp/x\n' };
    expect(() => validateSubmit(request({ workspace: [config] }))).toThrow(/workspace: path ".git\/config" is inside version-control metadata/);
    expect(() => validateSubmit(request({ acceptanceTests: [{ path: 'tests/.GIT/hooks/test_x.py', content: 'x' }] }))).toThrow(/inside version-control metadata/);
    expect(() => validateSubmit(request({ dataFiles: [{ path: '.hg/hgrc', content: Buffer.from('[hooks]\n') }] }))).toThrow(/data_files: path ".hg\/hgrc" is inside version-control metadata/);
    expect(() => validateSubmit(request({ workspace: [{ path: '.gitignore', content: '*.pyc\n' }, { path: '.gitmodules', content: '' }] }))).not.toThrow();
  });

  it('accepts files that are not text in data_files, within the limits, and refuses bad paths and duplicates', () => {
    const fixture = { path: 'tests/files/latin1.sql', content: Buffer.from([0x73, 0x65, 0x6c, 0xe9, 0x00]) };
    expect(() => validateSubmit(request({ dataFiles: [fixture] }))).not.toThrow();
    expect(() => validateSubmit(request({ dataFiles: [{ ...fixture, path: '../etc/passwd' }] }))).toThrow(/data_files: path/);
    expect(() => validateSubmit(request({ dataFiles: [fixture, fixture] }))).toThrow(/appears twice/);
    expect(() => validateSubmit(request({ workspace: [{ path: fixture.path, content: 'x' }], dataFiles: [fixture] }))).toThrow(/appears twice \(or also in workspace\)/);
  });
});
