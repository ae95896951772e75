import { afterAll, beforeAll, describe, expect, it, jest } from '@jest/globals';
import { SANDBOX_JOB_QUEUE } from '@ratchet/agent';
import { createClient, createQueueCaller, InProcessBroker, InProcessTransport, NatsTransport } from '@ratchet/bus';
import {
  BanditRun,
  CheckCodeRequest,
  Confidence,
  Language,
  RunJobRequest,
  RunJobResponse,
  SafetyServiceDefinition,
  SafetyVerdict,
  Severity,
  type CheckCodeResponse,
  type SandboxCommand,
} from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { hostService, type RunningService } from '@ratchet/runtime';
import { startNatsServer, type NatsServerFixture } from '@ratchet/testing';
import { BanditMode, CodeAction, createSafetyService, defaultCodeCheckSettings, loadParsers, RuleId, type CodeCheckSettings, type Parsers, type SandboxJobs } from '../src';
import { startSandbox, type SandboxFixture } from './sandbox';

// CheckCode with all three scanners: Bandit in the real sandbox (a sandbox-runner process on a real
// nats-server's job queue, Docker and the sandbox image), ESLint in-process, the built-in rules.
jest.setTimeout(120_000);

let fixture: SandboxFixture;
let parsers: Parsers;
beforeAll(async () => {
  [fixture, parsers] = await Promise.all([startSandbox(), loadParsers()]);
});
afterAll(async () => {
  parsers?.close();
  await fixture?.stop();
});

/** Calls CheckCode over the in-process bus of a safety service with `code` settings and `sandbox`. */
async function checkCodeWith(
  code: CodeCheckSettings,
  sandbox: SandboxJobs | undefined,
  files: { path: string; content: string }[],
  timeoutMs = 60_000,
  baseFiles: { path: string; content: string }[] = [],
  request: Partial<CheckCodeRequest> = {},
): Promise<CheckCodeResponse> {
  const broker = new InProcessBroker();
  const transports = [new InProcessTransport(broker), new InProcessTransport(broker)] as const;
  const service = await createSafetyService({ parsers, code, ...(sandbox === undefined ? {} : { sandbox }) });
  let running: RunningService | undefined;
  try {
    running = hostService({ name: 'safety', version: 'test', definition: SafetyServiceDefinition, implementation: service.implementation }, { transport: transports[0] });
    await running.server.ready;
    const client = createClient(transports[1], SafetyServiceDefinition, { maxAttempts: 1 });
    return await client.checkCode(CheckCodeRequest.fromPartial({ taskId: 'task-7', iteration: 2, language: Language.LANGUAGE_PYTHON, files, baseFiles, ...request }), { timeoutMs });
  } finally {
    await running?.stop(1_000);
    await service.close();
    for (const transport of transports) await transport.close();
  }
}

describe('CheckCode with Bandit in the sandbox and ESLint', () => {
  it('sends Bandit only the files it has not scanned with this content; a check of known files runs no job', async () => {
    const service = await createSafetyService({ parsers, code: defaultCodeCheckSettings, sandbox: fixture.sandbox });
    const check = (files: { path: string; content: string }[]) =>
      service.implementation.checkCode(CheckCodeRequest.fromPartial({ taskId: 'task-cache', iteration: 1, language: Language.LANGUAGE_PYTHON, files }), {
        requestId: 'r',
        deadline: Date.now() + 60_000,
        signal: new AbortController().signal,
        headers: {},
      });
    const brief = (response: CheckCodeResponse) => response.findings.map(({ path, ruleId, line, action }) => [path, ruleId, line, action]);
    const game = { path: 'game.py', content: 'import random\n\n\ndef roll():\n    return random.randint(1, 6)\n' };
    const test = { path: 'tests/test_game.py', content: 'from game import roll\n\n\ndef test_roll():\n    assert 1 <= roll() <= 6\n' };
    try {
      let jobs = fixture.jobs();
      const first = await check([game, test]);
      expect(fixture.jobs() - jobs).toBe(1);
      expect(brief(first).some(([, ruleId]) => String(ruleId).startsWith('bandit.'))).toBe(true);

      jobs = fixture.jobs();
      const again = await check([game, test]);
      expect(fixture.jobs() - jobs).toBe(0);
      expect(brief(again)).toEqual(brief(first));

      // One file changed: a job again, and the answer is what a fresh check gives.
      const changed = { ...game, content: `${game.content}\n\ndef token():\n    return random.random()\n` };
      jobs = fixture.jobs();
      const next = await check([changed, test]);
      expect(fixture.jobs() - jobs).toBe(1);
      expect(brief(next)).toEqual(brief(await checkCodeWith(defaultCodeCheckSettings, fixture.sandbox, [changed, test])));
      expect(brief(next).filter(([path, ruleId]) => path === 'game.py' && String(ruleId).startsWith('bandit.'))).toHaveLength(2);
    } finally {
      await service.close();
    }
  });

  it("leaves the sandbox's shape to the runner, so the Bandit job fits the runner's warm pool (only its timeout and output cap are its own)", async () => {
    const sent: RunJobRequest[] = [];
    const recording: SandboxJobs = { runJob: (request, options) => (sent.push(request), fixture.sandbox.runJob(request, options)) };
    const response = await checkCodeWith(defaultCodeCheckSettings, recording, [{ path: 'pool.py', content: 'import pickle\n\n\ndef load(data):\n    return pickle.loads(data)\n' }]);
    expect(response.findings.some((found) => found.ruleId === 'bandit.B301')).toBe(true);
    expect(sent).toHaveLength(1);
    // Zero is "the runner's default": the memory, processes, CPUs and work directory its pooled sandboxes were started with.
    expect(sent[0]!.job!.limits).toMatchObject({ memoryBytes: 0, pids: 0, cpus: 0, workDirBytes: 0, outputLimitBytes: 8 * 1024 * 1024 });
    expect(sent[0]!.job!.limits!.timeout!.seconds).toBeGreaterThan(0);
  });

  it('adds Bandit findings with CWE, confidence and tool, judged by the policy, next to the built-in ones', async () => {
    const files = [
      { path: 'game.py', content: 'import random\n\n\ndef roll():\n    return random.randint(1, 6)\n' },
      { path: 'net.py', content: 'import telnetlib\n\nsession = telnetlib.Telnet("router")\n' },
      { path: 'tests/test_game.py', content: 'from game import roll\n\n\ndef test_roll():\n    assert 1 <= roll() <= 6\n' },
    ];
    const jobsBefore = fixture.jobs();
    const response = await checkCodeWith(defaultCodeCheckSettings, fixture.sandbox, files);
    expect(fixture.jobs() - jobsBefore).toBe(1);
    expect(response.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_BLOCK);
    const brief = response.findings.map(({ path, ruleId, tool, action }) => [path, ruleId, tool, action]);
    expect(brief).toEqual([
      ['game.py', 'bandit.B311', 'bandit', SafetyVerdict.SAFETY_VERDICT_WARN],
      ['net.py', RuleId.PYTHON_CLEARTEXT_PROTOCOL, 'ratchet', SafetyVerdict.SAFETY_VERDICT_BLOCK],
      ['net.py', 'bandit.B401', 'bandit', SafetyVerdict.SAFETY_VERDICT_BLOCK],
      ['net.py', RuleId.PYTHON_CLEARTEXT_PROTOCOL, 'ratchet', SafetyVerdict.SAFETY_VERDICT_BLOCK],
      ['net.py', 'bandit.B312', 'bandit', SafetyVerdict.SAFETY_VERDICT_BLOCK],
    ]);
    expect(response.findings[0]).toMatchObject({ severity: Severity.SEVERITY_LOW, confidence: Confidence.CONFIDENCE_HIGH, cwe: 'CWE-330', line: 5, snippet: 'return random.randint(1, 6)' });
    // The test file's assert (B101) is ignored by the default policy, so the test file has no finding.
    expect(response.findings.some((found) => found.path === 'tests/test_game.py')).toBe(false);
  });

  it('judges the change: what the original file already had is pre-existing and blocks nothing, in the same one Bandit job', async () => {
    // A real module's shape: an optional dependency, asserts (B101) and a B107-style default, all there before the change.
    const original = [
      'import subprocess',
      '',
      'try:',
      '    import wcwidth',
      'except ImportError:',
      '    wcwidth = None',
      '',
      '',
      'def render(rows, floor_token: str = "<", password="hunter2"):',
      '    assert rows is not None',
      '    return subprocess.call(rows, shell=True)',
      '',
      '',
      'def width(text):',
      '    assert isinstance(text, str)',
      '    return len(text)',
      '',
    ].join('\n');
    const lineOf = (content: string, text: string) => content.split('\n').findIndex((line) => line.includes(text)) + 1;
    // The fix is one line; a second change adds a call that must still block.
    const fixed = original.replace('    return len(text)', '    return len(text.expandtabs())');
    const withNewCall = fixed.replace('def width(text):', 'import os\n\n\ndef width(text):\n    os.system(text)');
    const base = [{ path: 'pkg/table.py', content: original }];
    const jobsBefore = fixture.jobs();
    const response = await checkCodeWith(defaultCodeCheckSettings, fixture.sandbox, [{ path: 'pkg/table.py', content: withNewCall }], 60_000, base);
    expect(fixture.jobs() - jobsBefore).toBe(1);
    const brief = response.findings.map(({ ruleId, line, preExisting }) => [ruleId, line, preExisting]);
    expect(brief).toEqual(
      expect.arrayContaining([
        ['bandit.B107', lineOf(withNewCall, 'def render'), true],
        ['bandit.B101', lineOf(withNewCall, 'assert rows'), true],
        ['bandit.B101', lineOf(withNewCall, 'assert isinstance'), true],
        [RuleId.PYTHON_SUBPROCESS_SHELL, lineOf(withNewCall, 'shell=True'), true],
        [RuleId.PYTHON_OS_COMMAND, lineOf(withNewCall, 'os.system'), false],
      ]),
    );
    // Only the os.system the change added blocks.
    expect(response.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_BLOCK);
    expect(response.findings.filter((found) => !found.preExisting).every((found) => found.line === lineOf(withNewCall, 'os.system'))).toBe(true);
    const oneLineFix = await checkCodeWith(defaultCodeCheckSettings, fixture.sandbox, [{ path: 'pkg/table.py', content: fixed }], 60_000, base);
    expect(oneLineFix.findings.length).toBeGreaterThan(3);
    expect(oneLineFix.findings.every((found) => found.preExisting)).toBe(true);
    expect(oneLineFix.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_ALLOW);
    // Without the original, the same file is judged whole, as for a greenfield task.
    const whole = await checkCodeWith(defaultCodeCheckSettings, fixture.sandbox, [{ path: 'pkg/table.py', content: fixed }]);
    expect(whole.findings.some((found) => found.preExisting)).toBe(false);
    expect(whole.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_BLOCK);
  });

  it('defers Bandit to a gate in the test job: it stops the tests on a blocking finding, and its report is judged as a job of its own would be', async () => {
    // The policy as the gate must read it: a rule by id pattern and path blocks what the thresholds would only warn about.
    const settings: CodeCheckSettings = {
      ...defaultCodeCheckSettings,
      policy: { ...defaultCodeCheckSettings.policy, rules: [{ ids: ['bandit.B31*'], paths: ['casino/**'], action: CodeAction.BLOCK }, ...defaultCodeCheckSettings.policy.rules] },
    };
    const service = await createSafetyService({ parsers, code: settings, sandbox: fixture.sandbox });
    const check = (files: { path: string; content: string }[], banditRun: BanditRun, banditGateOutput: Buffer = Buffer.alloc(0)) =>
      service.implementation.checkCode(CheckCodeRequest.fromPartial({ taskId: 'task-gate', iteration: 1, language: Language.LANGUAGE_PYTHON, files, banditRun, banditGateOutput }), {
        requestId: 'r',
        deadline: Date.now() + 60_000,
        signal: new AbortController().signal,
        headers: {},
      });
    // What the tester does with the gate: the gate first, then the tests, in one job.
    const testJob = async (files: { path: string; content: string }[], gate: SandboxCommand) => {
      const { result } = await fixture.sandbox.runJob(
        RunJobRequest.fromPartial({
          job: {
            jobId: `gate-${Math.random().toString(36).slice(2, 10)}`,
            taskId: 'task-gate',
            iteration: 1,
            language: Language.LANGUAGE_PYTHON,
            files,
            commands: [gate, { name: 'tests', argv: ['python3', '-c', 'print("the tests ran")'], workingDirectory: '' }],
            limits: { timeout: { seconds: 60, nanos: 0 } },
            deadline: new Date(Date.now() + 60_000),
          },
        }),
        { deadline: Date.now() + 60_000, signal: new AbortController().signal },
      );
      const gateBytes = result!.commandResults[0]!.stdoutBytes;
      return { result: result!, gateOutput: result!.stdout.subarray(0, gateBytes), testsOutput: result!.stdout.subarray(gateBytes).toString('utf8') };
    };
    // random (B311) is Bandit's alone to find; a workspace module named bandit must not stand in for Bandit.
    const dice = 'import random\n\n\ndef roll():\n    return random.randint(1, 6)\n';
    const blocked = [
      { path: 'casino/dice.py', content: dice },
      { path: 'bandit/__init__.py', content: '' },
      { path: 'bandit/__main__.py', content: 'print(\'{"results": [], "errors": [], "metrics": {}}\')\n' },
    ];
    try {
      let jobs = fixture.jobs();
      const deferred = await check(blocked, BanditRun.BANDIT_RUN_DEFERRED);
      expect(fixture.jobs() - jobs).toBe(0);
      expect(deferred.verdict).not.toBe(SafetyVerdict.SAFETY_VERDICT_BLOCK);
      expect(deferred.banditGate?.argv.slice(0, 3)).toEqual(['python3', '-I', '-c']);

      const stopped = await testJob(blocked, deferred.banditGate!);
      expect(stopped.result.commandResults.map((command) => [command.name, command.exitCode])).toEqual([['bandit-gate', 3]]);
      expect(stopped.testsOutput).not.toContain('the tests ran');
      jobs = fixture.jobs();
      const judged = await check(blocked, BanditRun.BANDIT_RUN_REPORTED, stopped.gateOutput);
      expect(fixture.jobs() - jobs).toBe(0);
      expect(judged.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_BLOCK);
      expect(judged.findings.map(({ path, ruleId, action }) => [path, ruleId, action])).toContainEqual(['casino/dice.py', 'bandit.B311', SafetyVerdict.SAFETY_VERDICT_BLOCK]);
      // The report is kept like a job's: the same files again need no Bandit at all.
      expect((await check(blocked, BanditRun.BANDIT_RUN_DEFERRED)).banditGate).toBeUndefined();

      // A warning does not stop the tests, and the report is judged the same as the check's own job would.
      const warned = [{ path: 'dice.py', content: dice }];
      const gate = (await check(warned, BanditRun.BANDIT_RUN_DEFERRED)).banditGate!;
      const ran = await testJob(warned, gate);
      expect(ran.result.commandResults.map((command) => [command.name, command.exitCode])).toEqual([['bandit-gate', 0], ['tests', 0]]);
      expect(ran.testsOutput.trim()).toBe('the tests ran');
      const withGate = await check(warned, BanditRun.BANDIT_RUN_REPORTED, ran.gateOutput);
      expect(withGate).toEqual(await checkCodeWith(settings, fixture.sandbox, warned));
      expect(withGate.findings.map((found) => [found.ruleId, found.action])).toEqual([['bandit.B311', SafetyVerdict.SAFETY_VERDICT_WARN]]);
    } finally {
      await service.close();
    }
  });

  it('scans in a job of its own, not in a gate, when the gate would not fit in one command argument', async () => {
    // A policy of 3,000 rules spells out to more than 96 KiB in the gate's argument.
    const settings: CodeCheckSettings = {
      ...defaultCodeCheckSettings,
      policy: { ...defaultCodeCheckSettings.policy, rules: [...Array.from({ length: 3_000 }, (_, index) => ({ ids: [`bandit.X${index}`], action: CodeAction.ALLOW })), ...defaultCodeCheckSettings.policy.rules] },
    };
    const many = [{ path: 'pick.py', content: 'import random\n\nPICK = random.random()\n' }];
    const jobs = fixture.jobs();
    const response = await checkCodeWith(settings, fixture.sandbox, many, 60_000, [], { banditRun: BanditRun.BANDIT_RUN_DEFERRED });
    expect(response.banditGate).toBeUndefined();
    expect(fixture.jobs() - jobs).toBe(1);
    expect(response.findings.filter((found) => found.ruleId === 'bandit.B311')).toHaveLength(many.length);
  });

  it('scans in a job of its own what the gate did not: no output, or another set of files', async () => {
    const files = [{ path: 'legacy.py', content: 'from Crypto.Hash import MD5\n\nDIGEST = MD5.new(b"x")\n' }];
    for (const output of [Buffer.alloc(0), Buffer.from('{"banditExitCode": 0, "stderr": "", "report": {"results": [], "errors": [], "metrics": {"other.py": {}}}}')]) {
      const jobs = fixture.jobs();
      const response = await checkCodeWith(defaultCodeCheckSettings, fixture.sandbox, files, 60_000, [], { banditRun: BanditRun.BANDIT_RUN_REPORTED, banditGateOutput: output });
      expect(fixture.jobs() - jobs).toBe(1);
      expect(response.findings.map((found) => found.ruleId)).toContain('bandit.B413');
    }
  });

  it('reads past # nosec: the code under check cannot silence Bandit', async () => {
    const response = await checkCodeWith({ ...defaultCodeCheckSettings, policy: { ...defaultCodeCheckSettings.policy, rules: [] } }, fixture.sandbox, [
      { path: 'quiet.py', content: 'import subprocess\n\n\ndef run(cmd):\n    subprocess.call(cmd, shell=True)  # nosec\n' },
    ]);
    expect(response.findings.map((found) => found.ruleId)).toEqual(['bandit.B404', RuleId.PYTHON_SUBPROCESS_SHELL, 'bandit.B602']);
  });

  it('runs ESLint on TypeScript, and sends no job when there is no Python', async () => {
    const jobsBefore = fixture.jobs();
    const response = await checkCodeWith(defaultCodeCheckSettings, fixture.sandbox, [
      { path: 'src/view.ts', content: 'export function render(engine: { escapeMarkup: boolean }): void {\n  engine.escapeMarkup = false;\n}\n' },
    ]);
    expect(fixture.jobs()).toBe(jobsBefore);
    expect(response).toEqual({
      verdict: SafetyVerdict.SAFETY_VERDICT_BLOCK,
      findings: [expect.objectContaining({ ruleId: 'eslint.security/detect-disable-mustache-escape', tool: 'eslint-plugin-security', cwe: 'CWE-79', line: 2, column: 3 })],
    });
  });

  it('runs no scanner the settings turn off', async () => {
    const jobsBefore = fixture.jobs();
    const response = await checkCodeWith({ ...defaultCodeCheckSettings, bandit: BanditMode.OFF, eslint: false }, fixture.sandbox, [
      { path: 'game.py', content: 'import random\nprint(random.random())\n' },
      { path: 'src/view.ts', content: 'export const off = (engine: { escapeMarkup: boolean }) => { engine.escapeMarkup = false; };\n' },
    ]);
    expect(fixture.jobs()).toBe(jobsBefore);
    expect(response).toEqual({ verdict: SafetyVerdict.SAFETY_VERDICT_ALLOW, findings: [] });
  });
});

describe('when Bandit cannot run (no runner takes the job)', () => {
  let nats: NatsServerFixture;
  let transport: NatsTransport;
  let noRunner: SandboxJobs;
  let close: () => Promise<void>;
  beforeAll(async () => {
    nats = await startNatsServer();
    transport = await NatsTransport.connect({ url: nats.url, name: 'safety-test-no-runner' });
    const caller = createQueueCaller(transport, SANDBOX_JOB_QUEUE, { request: RunJobRequest, response: RunJobResponse });
    noRunner = { runJob: (request, options) => caller.call(request.job?.jobId ?? '', request, options) };
    close = () => caller.close();
  });
  afterAll(async () => {
    await close?.();
    await transport?.close();
    await nats?.stop();
  });
  const files = [{ path: 'app.py', content: 'import os\nos.system(cmd)\n' }];
  const quick = { ...defaultCodeCheckSettings, banditTimeoutMs: 2_000 };

  it('auto: answers with the other scanners and an INFO finding that says why', async () => {
    const response = await checkCodeWith(quick, noRunner, files);
    expect(response.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_BLOCK);
    expect(response.findings.map((found) => [found.ruleId, found.tool, found.severity, found.action])).toEqual([
      [RuleId.PYTHON_OS_COMMAND, 'ratchet', Severity.SEVERITY_HIGH, SafetyVerdict.SAFETY_VERDICT_BLOCK],
      [RuleId.SCANNER_SKIPPED, 'bandit', Severity.SEVERITY_INFO, SafetyVerdict.SAFETY_VERDICT_ALLOW],
    ]);
    expect(response.findings[1]!.message).toMatch(/^Bandit did not scan the 1 Python file: the sandbox job failed \(DEADLINE_EXCEEDED: .*\)\. The built-in rules and ESLint still checked them$/);
  });

  it('auto: an INFO finding alone does not change an ALLOW', async () => {
    const response = await checkCodeWith(quick, noRunner, [{ path: 'ok.py', content: 'print(1)\n' }]);
    expect(response.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_ALLOW);
  });

  it('required: fails with a retryable UNAVAILABLE that says what to do', async () => {
    await expect(checkCodeWith({ ...quick, bandit: BanditMode.REQUIRED }, noRunner, files)).rejects.toMatchObject({
      code: ErrorCode.UNAVAILABLE,
      isRetryable: true,
      message: expect.stringContaining('set code.bandit (RATCHET_CODE_BANDIT) to auto'),
    });
  });

  it('leaves time to answer before the call deadline', async () => {
    const started = Date.now();
    const response = await checkCodeWith({ ...defaultCodeCheckSettings, banditTimeoutMs: 60_000 }, noRunner, files, 4_000);
    expect(Date.now() - started).toBeLessThan(4_000);
    expect(response.findings.at(-1)).toMatchObject({ ruleId: RuleId.SCANNER_SKIPPED, tool: 'bandit' });
  });
});
