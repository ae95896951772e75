import { afterEach, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { loadPrompts, renderTemplate } from '@ratchet/prompting';
import { createClient, InProcessTransport } from '@ratchet/bus';
import { CoderMode, CoderServiceDefinition, Language, Severity, TestCaseStatus, type WriteCodeRequest } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { ScriptedModel, type ScriptedTurn } from '@ratchet/llm';
import { hostService, type RunningService } from '@ratchet/runtime';
import { agentPromptValues, createCoderService } from '../src';

const prompts = loadPrompts(path.resolve(__dirname, '../../../config'));

function request(overrides: Partial<WriteCodeRequest> = {}): WriteCodeRequest {
  return {
    taskId: 'task-1',
    iteration: 1,
    goal: 'add two numbers',
    language: Language.LANGUAGE_PYTHON,
    dataFiles: [],
    setupCommand: '',
    existingProject: false,
    preExistingFailures: [],
    earlierChanges: [],
    plan: { summary: 'calc.py with add()', steps: [{ number: 1, description: 'write add', paths: ['calc.py'] }], files: [], testStrategy: 'pytest', language: 1, dependencies: [], appliedLessonIds: [], changesTests: false, changesTestsReason: '' },
    files: [
      { path: 'calc.py', content: 'def add(a, b):\n    return a - b\n' },
      { path: 'old.py', content: 'x = 1\n' },
    ],
    acceptanceTests: [{ path: 'tests/test_calc.py', content: 'from calc import add\n\ndef test_add():\n    assert add(1, 2) == 3\n' }],
    reflection: undefined,
    previousTestReport: undefined,
    safetyFindings: [],
    lessons: [],
    maxTokens: 0,
    mode: 0,
    testCommand: [],
    maxModelCalls: 0,
    protectedPaths: [],
    progressSubject: '',
    approveAskedCommands: false,
    commandGates: false,
    commandDecisions: [],
    reviewFindings: [],
    ...overrides,
  };
}

const reply = (files: { path: string; content: string }[], deletedPaths: string[] = []) => JSON.stringify({ files, deletedPaths, summary: 'fixed add' });

describe('coder over the in-process bus', () => {
  let running: RunningService | undefined;
  afterEach(async () => {
    await running?.stop(100);
  });

  function serve(turns: ScriptedTurn[]) {
    const model = new ScriptedModel(turns);
    const transport = new InProcessTransport();
    const service = createCoderService({ roleModel: { model, modelName: 'm', temperature: 0, maxTokens: 1000 }, prompts });
    running = hostService({ name: 'coder', version: 'test', definition: CoderServiceDefinition, implementation: service.implementation }, { transport });
    return { model, client: createClient(transport, CoderServiceDefinition) };
  }

  it('returns the whole new file set: replied files replace, deleted paths go, others stay', async () => {
    const { client } = serve([{ role: 'coder', reply: reply([{ path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' }, { path: 'pkg/util.py', content: '' }], ['old.py']) }]);
    const response = await client.writeCode(request());
    expect(response.files).toEqual([
      { path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' },
      { path: 'pkg/util.py', content: '' },
    ]);
    expect(response.deletedPaths).toEqual(['old.py']);
    expect(response.summary).toBe('fixed add');
  });

  it('shows the model the reflection, the failing tests and the safety findings of the last attempt', async () => {
    const { model, client } = serve([{ role: 'coder', reply: reply([{ path: 'calc.py', content: 'ok' }]) }]);
    await client.writeCode(
      request({
        reflection: { rootCause: 'add subtracts', hypothesis: 'use +', fixDirection: 'replace - with +', candidateLesson: undefined, errorSignature: '', confidence: 1, replanRecommended: false, relevantLessonIds: [], disputedTests: [] },
        previousTestReport: {
          framework: 'pytest',
          total: 1,
          passed: 0,
          failed: 1,
          errored: 0,
          skipped: 0,
          duration: undefined,
          parsed: true,
          parseError: '',
          cases: [{ name: 'test_add', suite: 'tests.test_calc', file: '', status: TestCaseStatus.TEST_CASE_STATUS_FAILED, duration: undefined, failureMessage: 'AssertionError: assert -1 == 3', failureDetail: '' }],
        },
        safetyFindings: [{ ruleId: 'python-os-system', severity: 4, path: 'calc.py', line: 3, column: 1, message: 'os.system runs a shell', snippet: '', remediation: 'do not run commands', cwe: '', confidence: 0, tool: 'ratchet', action: 0, preExisting: false }],
      }),
    );
    const user = model.calls[0]!.request.messages[1]!.content;
    expect(user).toContain('Root cause: add subtracts');
    expect(user).toContain('What to change: replace - with +');
    expect(user).toContain('tests.test_calc::test_add: AssertionError: assert -1 == 3');
    expect(user).toContain('[python-os-system] calc.py:3');
    expect(user).toContain('--- tests/test_calc.py');
  });

  it("shows the task's spec and profile and the blocking review findings of the last attempt, in files mode and in agent mode", async () => {
    const spec = { summary: 'A calculator.', behaviour: 'add(a, b) returns a + b', inputs: 'two numbers', outputs: 'a number', interface: ['add(a, b) -> float'], edgeCases: ['floats'], acceptanceCriteria: ['add(1, 2) == 3'], assumptions: [] };
    const profile = { name: 'library', description: 'an importable module', language: Language.LANGUAGE_PYTHON, layout: [], testStyle: '', dependencies: [], prompt: 'Type-annotate public functions.' };
    const reviewFindings = [{ severity: Severity.SEVERITY_MEDIUM, path: 'calc.py', line: 2, category: 'correctness', cwe: '', message: 'add subtracts', suggestion: 'return a + b', blocking: true, source: 'reviewer' }];
    const { model, client } = serve([
      { role: 'coder', reply: reply([{ path: 'calc.py', content: 'ok' }]) },
      { role: 'coder', reply: reply([{ path: 'calc.py', content: 'ok' }]) },
    ]);
    await client.writeCode(request({ spec, profile, reviewFindings }));
    const user = model.calls[0]!.request.messages[1]!.content;
    expect(user).toContain('Spec (the goal made precise');
    expect(user).toContain('Acceptance criteria:\n1. add(1, 2) == 3');
    expect(user).toContain('Project profile: library (an importable module)');
    expect(user).toContain('Profile instructions:\nType-annotate public functions.');
    expect(user).toContain('- [medium, blocking from reviewer] calc.py:2 (correctness): add subtracts Fix: return a + b');
    // Review findings alone are feedback: this is not a first attempt.
    expect(user).toContain('(see the review and audit findings below)');
    expect(user).not.toContain('(first attempt)');

    await client.writeCode(request());
    const plain = model.calls[1]!.request.messages[1]!.content;
    expect(plain).toContain('(first attempt)');
    expect(plain).not.toContain('pre-existing');
    expect(plain).not.toContain('Spec (');
    expect(plain).not.toContain('Project profile');
    expect(plain).not.toContain('Review and audit findings');

    // Agent mode renders the same sections into its own prompt.
    const values = agentPromptValues(request({ spec, profile, reviewFindings, mode: CoderMode.CODER_MODE_AGENT }), '', new Set(['tests/test_calc.py']));
    const agentUser = renderTemplate(prompts.coderAgent.user, values);
    expect(agentUser).toContain('Acceptance criteria:\n1. add(1, 2) == 3');
    expect(agentUser).toContain('Type-annotate public functions.');
    expect(agentUser).toContain('calc.py:2 (correctness): add subtracts');
    expect(agentUser).toContain('Repository map (the most relevant files first, with their definitions):\n(use list_files)');
    expect(renderTemplate(prompts.coderAgent.user, agentPromptValues(request(), 'calc.py', new Set()))).not.toContain('Spec (');
  });

  it('names the test files in the test command it shows when the task gives none, as the tester runs them', () => {
    expect(agentPromptValues(request(), '', new Set()).testCommand).toBe('python3 -m pytest -q tests/test_calc.py');
    const js = (paths: string[]) => request({ language: Language.LANGUAGE_JAVASCRIPT, acceptanceTests: paths.map((path) => ({ path, content: '' })) });
    expect(agentPromptValues(js(['test/index.test.js', 'test/bin.test.js']), '', new Set()).testCommand).toBe('node --test test/bin.test.js test/index.test.js');
    expect(agentPromptValues(js(Array.from({ length: 13 }, (_, index) => `test/t${index}.test.js`)), '', new Set()).testCommand).toBe('node --test on the 13 acceptance test files');
    expect(agentPromptValues(request({ testCommand: ['sh', '-c', 'make check'] }), '', new Set()).testCommand).toBe('make check');
  });

  it('says the work directory is a git repository only when the session made it one', () => {
    expect(agentPromptValues(request(), '', new Set(), true).repository).toBe(
      'The work directory is a git repository committed as this attempt started: `git diff` shows your change so far, `git stash` sets it aside to run the tests on the original and `git stash pop` brings it back.',
    );
    expect(agentPromptValues(request({ iteration: 2 }), '', new Set(), true).repository).toContain("committed as this attempt started (earlier attempts' changes included)");
    expect(renderTemplate(prompts.coderAgent.user, agentPromptValues(request(), '', new Set(), false))).not.toContain('git');
  });

  it('tells a later attempt which files earlier attempts changed and which tests failed before any change', async () => {
    const { model, client } = serve([{ role: 'coder', reply: reply([{ path: 'calc.py', content: 'ok' }]) }]);
    await client.writeCode(request({ iteration: 2, earlierChanges: ['calc.py', 'util.py'], preExistingFailures: ['tests.test_io::test_fixture'] }));
    const user = model.calls[0]!.request.messages[1]!.content;
    expect(user).toContain('(attempt 2)');
    expect(user).not.toContain('(first attempt)');
    expect(user).toContain('Earlier attempts changed these files (their edits are in the workspace now): calc.py, util.py');
    expect(user).toContain('pre-existing failures');
    expect(user).toContain('- tests.test_io::test_fixture');
  });

  it('does not let the model write test files or the read-only tests: the repair round says why', async () => {
    const { model, client } = serve([
      { role: 'coder', reply: reply([{ path: 'tests/test_calc.py', content: 'def test_add():\n    pass\n' }]) },
      { role: 'coder', expect: ['read-only'], reply: reply([{ path: 'test_extra.py', content: '' }]) },
    ]);
    const response = await client.writeCode(request());
    expect(response.files).toEqual([]);
    expect(response.replyFailure?.message).toContain('test file name');
    expect(response.usage?.modelCalls).toBe(2);
    expect(model.remaining).toBe(0);
  });

  it('never returns a file inside .git (in any spelling) or a git HEAD: the repair round says why, and a reply still doing it fails', async () => {
    const fsmonitor = { path: '.git/config', content: '[core]\n\tfsmonitor = touch /tmp/x\n' };
    const { model, client } = serve([
      { role: 'coder', reply: reply([{ path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' }, fsmonitor]) },
      { role: 'coder', expect: ['inside version-control metadata'], reply: reply([{ path: 'calc.py', content: 'ok' }, { path: '.GIT /hooks/pre-commit', content: '#!/bin/sh\ntouch /tmp/x\n' }]) },
    ]);
    const response = await client.writeCode(request());
    expect(response.files).toEqual([]);
    expect(response.replyFailure?.message).toContain('inside version-control metadata');
    expect(model.remaining).toBe(0);

    const head = serve([
      { role: 'coder', reply: reply([{ path: 'calc.py', content: 'ok' }, { path: 'HEAD', content: 'ref: refs/heads/main\n' }, { path: 'refs/heads/main', content: '' }]) },
      { role: 'coder', expect: ['is a git HEAD'], reply: reply([{ path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' }]) },
    ]);
    expect((await head.client.writeCode(request())).files.map((file) => file.path)).toEqual(['calc.py', 'old.py']);
    expect(head.model.remaining).toBe(0);
  });

  it('writes .gitignore, .gitattributes and .gitmodules: they are project files, not repository metadata', async () => {
    const { client } = serve([{ role: 'coder', reply: reply([{ path: '.gitignore', content: '*.pyc\n' }, { path: '.gitattributes', content: '* text=auto\n' }, { path: '.gitmodules', content: '' }]) }]);
    expect((await client.writeCode(request())).files.map((file) => file.path)).toEqual(['.gitattributes', '.gitignore', '.gitmodules', 'calc.py', 'old.py']);
  });

  it('rejects a request without a plan', async () => {
    const { client } = serve([]);
    await expect(client.writeCode(request({ plan: undefined }))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('plan is missing') });
  });
});
