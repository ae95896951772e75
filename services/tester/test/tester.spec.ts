import { afterEach, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { conversationTokens, loadPrompts } from '@ratchet/prompting';
import { createClient, InProcessTransport } from '@ratchet/bus';
import { Language, SandboxRunnerServiceDefinition, TesterServiceDefinition, type SandboxJobResult, type TestReport, type WriteTestsRequest } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { ScriptedModel, type ScriptedTurn } from '@ratchet/llm';
import { hostService, type RunningService } from '@ratchet/runtime';
import { largeWorkspace } from '@ratchet/testing';
import { testCommandProblem } from '@ratchet/agent';
import { createTesterService, customRunPassed, runPassed, testCommand } from '../src';

const prompts = loadPrompts(path.resolve(__dirname, '../../../config'));
const limits = { memoryBytes: 256 << 20, pids: 64, cpus: 1, timeout: { seconds: 30, nanos: 0 }, outputLimitBytes: 65536, workDirBytes: 16 << 20 };

function writeRequest(overrides: Partial<WriteTestsRequest> = {}): WriteTestsRequest {
  return {
    taskId: 'task-1',
    iteration: 1,
    goal: 'add two numbers',
    language: Language.LANGUAGE_TYPESCRIPT,
    plan: { summary: 'calc.ts', steps: [], files: [], testStrategy: 'node:test', language: 2, dependencies: [], appliedLessonIds: [], changesTests: false, changesTestsReason: '' },
    files: [{ path: 'src/calc.ts', content: 'export const add = (a: number, b: number) => a + b;\n' }],
    existingTests: [],
    acceptanceTests: [{ path: 'tests/user.test.ts', content: "import test from 'node:test';\n" }],
    lessons: [],
    maxTokens: 0,
    disputes: [],
    ...overrides,
  };
}

describe('tester over the in-process bus', () => {
  let running: RunningService | undefined;
  afterEach(async () => {
    await running?.stop(100);
  });

  function serve(turns: ScriptedTurn[]) {
    const model = new ScriptedModel(turns);
    const transport = new InProcessTransport();
    // RunTests needs a sandbox runner; these tests stop at validation, before any job is sent.
    const sandbox = createClient(transport, SandboxRunnerServiceDefinition);
    const service = createTesterService({ roleModel: { model, modelName: 'm', temperature: 0, maxTokens: 1000 }, prompts, sandbox, limits, image: 'ratchet-sandbox:3' });
    running = hostService({ name: 'tester', version: 'test', definition: TesterServiceDefinition, implementation: service.implementation }, { transport });
    return { model, client: createClient(transport, TesterServiceDefinition) };
  }

  it("writes test files named for the language's runner, told the framework and the user's tests", async () => {
    const tests = [{ path: 'tests/calc.test.ts', content: "import test from 'node:test';\ntest('adds', () => {});\n" }];
    const { model, client } = serve([{ role: 'tester', reply: JSON.stringify({ tests, summary: 'one test' }) }]);
    const response = await client.writeTests(writeRequest());
    expect(response.tests).toEqual(tests);
    const [system, user] = model.calls[0]!.request.messages;
    expect(system!.content).toContain('node:test');
    expect(system!.content).toContain('tests/<topic>.test.ts');
    expect(user!.content).toContain('--- tests/user.test.ts');
    // Tests come from the goal and the interface: the tester never sees the implementation.
    expect(user!.content).toContain('export const add = (a: number, b: number)');
    expect(user!.content).not.toContain('a + b');
    expect(system!.content).toContain('never from how the code happens');
  });

  it("is told to turn each of the spec's acceptance criteria into a test and to follow the profile's test style; neither shows without them", async () => {
    const tests = [{ path: 'tests/calc.test.ts', content: "import test from 'node:test';\ntest('adds', () => {});\n" }];
    const { model, client } = serve([
      { role: 'tester', reply: JSON.stringify({ tests, summary: 'one test' }) },
      { role: 'tester', reply: JSON.stringify({ tests, summary: 'one test' }) },
    ]);
    const spec = { summary: 'add', behaviour: 'add(a, b) is a + b', inputs: '', outputs: '', interface: ['add(a: number, b: number): number'], edgeCases: ['add(0.1, 0.2) is close to 0.3'], acceptanceCriteria: ['add(2, 3) === 5', 'add(-1, 1) === 0'], assumptions: [] };
    const profile = { name: 'library', description: '', language: Language.LANGUAGE_TYPESCRIPT, layout: [], testStyle: 'one describe block per exported function', dependencies: [], prompt: '' };
    await client.writeTests(writeRequest({ spec, profile }));
    const [system, user] = model.calls[0]!.request.messages;
    expect(system!.content).toContain('turn each of its acceptance\ncriteria into at least one test');
    expect(system!.content).toContain('When a project profile gives a test style, write the tests in that style.');
    expect(user!.content).toContain('Acceptance criteria:\n1. add(2, 3) === 5\n2. add(-1, 1) === 0');
    expect(user!.content).toContain('Edge cases:\n- add(0.1, 0.2) is close to 0.3');
    expect(user!.content).toContain('Test style: one describe block per exported function');
    await client.writeTests(writeRequest());
    const plain = model.calls[1]!.request.messages[1]!.content;
    expect(plain).not.toContain('Spec (');
    expect(plain).not.toContain('Project profile');
  });

  it("never replaces a user's acceptance test or a source file, and insists on test file names", async () => {
    const { model, client } = serve([
      { role: 'tester', reply: JSON.stringify({ tests: [{ path: 'tests/user.test.ts', content: 'x' }], summary: 's' }) },
      { role: 'tester', expect: ['already exists as source code or a user test'], reply: JSON.stringify({ tests: [{ path: 'src/calc.ts', content: 'x' }], summary: 's' }) },
    ]);
    const response = await client.writeTests(writeRequest());
    expect(response.tests).toEqual([]);
    expect(response.replyFailure?.message).toContain('already exists as source code or a user test');
    expect(model.remaining).toBe(0);
  });

  it('never writes a test inside .git, however it is spelled', async () => {
    const { model, client } = serve([
      { role: 'tester', reply: JSON.stringify({ tests: [{ path: '.git/hooks/calc.test.ts', content: 'x' }], summary: 's' }) },
      { role: 'tester', expect: ['inside version-control metadata'], reply: JSON.stringify({ tests: [{ path: 'GIT~1/calc.test.ts', content: 'x' }], summary: 's' }) },
    ]);
    const response = await client.writeTests(writeRequest());
    expect(response.tests).toEqual([]);
    expect(response.replyFailure?.message).toContain('inside version-control metadata');
    expect(model.remaining).toBe(0);
  });

  it('refuses a run without test paths (unless a test command decides), a test path that was not sent, or a malformed test command', async () => {
    const { client } = serve([]);
    const base = { taskId: 't', iteration: 1, language: Language.LANGUAGE_PYTHON, files: [{ path: 'app.py', content: '' }], dataFiles: [], setupCommand: '', limits: undefined, dependencies: [], testCommand: [] };
    await expect(client.runTests({ ...base, testPaths: [] })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('test_paths is empty') });
    await expect(client.runTests({ ...base, testPaths: [], testCommand: ['', 'test'] })).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('test_command names no program') });
    await expect(client.runTests({ ...base, testPaths: [], testCommand: ['npm', 'te\0st'] })).rejects.toMatchObject({ message: expect.stringContaining('NUL') });
    await expect(client.runTests({ ...base, testPaths: [], testCommand: Array.from({ length: 101 }, () => 'x') })).rejects.toMatchObject({ message: expect.stringContaining('at most 100') });
    await expect(client.runTests({ ...base, testPaths: ['tests/test_app.py'] })).rejects.toMatchObject({ message: expect.stringContaining('not among the files') });
    await expect(client.runTests({ ...base, files: [{ path: '/etc/passwd', content: '' }], testPaths: ['/etc/passwd'] })).rejects.toMatchObject({ message: expect.stringContaining('is absolute') });
    await expect(client.runTests({ ...base, files: [{ path: '.git/config', content: '[core]\n\tfsmonitor = touch /tmp/x\n' }], testPaths: ['app.py'] })).rejects.toMatchObject({ message: expect.stringContaining('inside version-control metadata') });
  });
});

describe('test commands and verdicts', () => {
  it('runs pytest through python3 -m with a JUnit report, and node --test with spec + junit reporters', () => {
    expect(testCommand('python', ['tests/test_a.py'])).toEqual(['python3', '-m', 'pytest', '-q', '-p', 'no:cacheprovider', '--continue-on-collection-errors', '--junitxml=/tmp/ratchet-junit.xml', 'tests/test_a.py']);
    expect(testCommand('typescript', ['tests/a.test.ts'])).toContain('--test-reporter=junit');
  });

  const report = (overrides: Partial<TestReport> = {}): TestReport => ({ framework: 'pytest', total: 3, passed: 3, failed: 0, errored: 0, skipped: 0, duration: undefined, cases: [], parsed: true, parseError: '', ...overrides });
  const result = (overrides: Partial<SandboxJobResult> = {}): SandboxJobResult =>
    ({ jobId: 'j', taskId: 't', exitCode: 0, stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), timedOut: false, oomKilled: false, testReport: report(), ...overrides }) as SandboxJobResult;

  it('passes only on a parsed report with cases, no failures, exit 0, no timeout or OOM', () => {
    expect(runPassed(result())).toBe(true);
    expect(runPassed(result({ testReport: report({ failed: 1, passed: 2 }) }))).toBe(false);
    expect(runPassed(result({ testReport: report({ errored: 1 }) }))).toBe(false);
    expect(runPassed(result({ testReport: report({ total: 0, passed: 0 }) }))).toBe(false);
    expect(runPassed(result({ testReport: report({ parsed: false, parseError: 'missing' }) }))).toBe(false);
    expect(runPassed(result({ exitCode: 0, testReport: undefined }))).toBe(false);
    expect(runPassed(result({ exitCode: 1 }))).toBe(false);
    expect(runPassed(result({ timedOut: true }))).toBe(false);
    expect(runPassed(result({ oomKilled: true }))).toBe(false);
  });

  it("passes a project's own command on exit 0, and on its JUnit report when it wrote one", () => {
    expect(customRunPassed(result({ testReport: report({ parsed: false, parseError: 'no report' }) }))).toBe(true);
    expect(customRunPassed(result({ testReport: undefined }))).toBe(true);
    expect(customRunPassed(result({ exitCode: 1, testReport: undefined }))).toBe(false);
    expect(customRunPassed(result({ timedOut: true, testReport: undefined }))).toBe(false);
    expect(customRunPassed(result({ oomKilled: true, testReport: undefined }))).toBe(false);
    // A report it wrote still counts: exit 0 with a failed case is a failure (a runner that swallows its exit code).
    expect(customRunPassed(result({ testReport: report({ failed: 1, passed: 2 }) }))).toBe(false);
    expect(customRunPassed(result({ testReport: report({ total: 0, passed: 0 }) }))).toBe(false);
    expect(customRunPassed(result())).toBe(true);
    expect(testCommandProblem([])).toBeUndefined();
    expect(testCommandProblem(['npm', 'test'])).toBeUndefined();
  });
});

describe('the tester prompt on a workspace of many large files', () => {
  let running: RunningService | undefined;
  afterEach(async () => {
    await running?.stop(100);
  });

  it('stays under tester.promptBudgetTokens (12,000), with the interface of the file the plan names and no bodies', async () => {
    const model = new ScriptedModel([{ role: 'tester', reply: JSON.stringify({ tests: [{ path: 'tests/test_totals.py', content: 'def test_totals():\n    pass\n' }], summary: 'one test' }) }]);
    const transport = new InProcessTransport();
    const service = createTesterService({ roleModel: { model, modelName: 'm', temperature: 0, maxTokens: 1000 }, prompts, sandbox: createClient(transport, SandboxRunnerServiceDefinition), limits, image: 'ratchet-sandbox:3' });
    running = hostService({ name: 'tester', version: 'test', definition: TesterServiceDefinition, implementation: service.implementation }, { transport });
    // 400 files of about 5,000 tokens each, 80 of them tests given as acceptance tests.
    const workspace = largeWorkspace(400);
    const planned = workspace[123]!.path;
    const plan = { summary: 'a TOTALS line first in report_123_45', steps: [{ number: 1, description: 'change report_123_45', paths: [planned] }], files: [{ path: planned, purpose: 'the report', isTest: false }], testStrategy: 'pytest', language: 1, dependencies: [], appliedLessonIds: [], changesTests: false, changesTestsReason: '' };
    await createClient(transport, TesterServiceDefinition, { defaultTimeoutMs: 60_000 }).writeTests(
      writeRequest({ goal: 'report_123_45 must print a TOTALS line first', language: Language.LANGUAGE_PYTHON, plan, files: workspace, acceptanceTests: workspace.filter((file) => file.path.startsWith('tests/')) }),
    );
    const messages = model.calls[0]!.request.messages;
    expect(conversationTokens(messages)).toBeLessThanOrEqual(12_000);
    const user = messages[1]!.content;
    expect(user).toContain(`--- ${planned}\n\`\`\`\ndef report_123_0(rows, width=0):\ndef report_123_1(rows, width=1):`);
    expect(user).toContain('def report_123_45(rows, width=45):');
    expect(user).toContain('Map of the other files');
    expect(user).not.toContain('lines.append(text[:width])\n    return');
  });
});
