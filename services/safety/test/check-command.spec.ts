import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createClient, InProcessBroker, InProcessTransport } from '@ratchet/bus';
import { CheckCommandRequest, Confidence, Language, SafetyServiceDefinition, SafetyVerdict, Severity } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { hostService, type RunningService } from '@ratchet/runtime';
import { CommandDecision, CommandRuleId, createSafetyService, defaultCommandPolicy, type SafetyService } from '../src';

describe('CheckCommand over the in-process bus', () => {
  const broker = new InProcessBroker();
  const serverTransport = new InProcessTransport(broker);
  const clientTransport = new InProcessTransport(broker);
  const client = createClient(clientTransport, SafetyServiceDefinition, { maxAttempts: 1 });
  let service: SafetyService;
  let running: RunningService;

  beforeAll(async () => {
    // A policy from config: a smaller cap, and unknown programs asked about.
    service = await createSafetyService({ commandPolicy: { ...defaultCommandPolicy, maxCommandLineChars: 2_000, defaultDecision: CommandDecision.ASK } });
    running = hostService({ name: 'safety', version: 'test', definition: SafetyServiceDefinition, implementation: service.implementation }, { transport: serverTransport });
    await running.server.ready;
  });

  afterAll(async () => {
    await running.stop(1_000);
    await service.close();
    await clientTransport.close();
    await serverTransport.close();
  });

  const request = (commandLine: string, more: Partial<CheckCommandRequest> = {}) => CheckCommandRequest.fromPartial({ taskId: 't-1', language: Language.LANGUAGE_PYTHON, commandLine, ...more });

  it('allows everyday commands', async () => {
    await expect(client.checkCommand(request('pytest -q tests/ | tail -5'), { timeoutMs: 10_000 })).resolves.toEqual({ verdict: SafetyVerdict.SAFETY_VERDICT_ALLOW, findings: [], reason: 'allowed' });
  });

  it('blocks a denied command with HIGH findings and says why', async () => {
    const response = await client.checkCommand(request('ls && git -C . push origin main'));
    expect(response).toEqual({
      verdict: SafetyVerdict.SAFETY_VERDICT_BLOCK,
      findings: [
        {
          ruleId: 'cmd.git-push',
          severity: Severity.SEVERITY_HIGH,
          path: '',
          line: 1,
          column: 7,
          message: '"git push" publishes work outside the sandbox; commit nothing remote',
          snippet: 'git -C . push origin main',
          remediation: expect.stringContaining('Commit locally'),
          cwe: '',
          confidence: Confidence.CONFIDENCE_HIGH,
          tool: 'ratchet',
          preExisting: false,
          action: SafetyVerdict.SAFETY_VERDICT_BLOCK,
        },
      ],
      reason: 'denied: "git push" publishes work outside the sandbox; commit nothing remote',
    });
  });

  it('asks for approval of package installs and of what the policy does not know, with MEDIUM findings', async () => {
    const install = await client.checkCommand(request('python -m pip install requests'));
    expect(install).toMatchObject({ verdict: SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL, findings: [expect.objectContaining({ ruleId: 'cmd.pip-install', severity: Severity.SEVERITY_MEDIUM })] });
    expect(install.reason).toBe('needs approval: "pip install" installs packages (requests); package installs need approval');
    const unknown = await client.checkCommand(request('cowsay moo'));
    expect(unknown).toMatchObject({ verdict: SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL, findings: [expect.objectContaining({ ruleId: CommandRuleId.DEFAULT })] });
  });

  it('checks argv when there is no command line, from the working directory', async () => {
    const response = await client.checkCommand(request('', { argv: ['rm', '-rf', '..'], workingDirectory: 'src' }));
    expect(response).toMatchObject({ verdict: SafetyVerdict.SAFETY_VERDICT_BLOCK, findings: [expect.objectContaining({ ruleId: 'cmd.rm-workspace', line: 0, column: 0, snippet: 'rm -rf ..' })] });
  });

  it('blocks a command line that does not parse', async () => {
    const response = await client.checkCommand(request("echo 'open"));
    expect(response).toMatchObject({ verdict: SafetyVerdict.SAFETY_VERDICT_BLOCK, findings: [expect.objectContaining({ ruleId: CommandRuleId.PARSE_ERROR, severity: Severity.SEVERITY_HIGH, line: 1, column: 6 })] });
  });

  it('turns bad input into INVALID_ARGUMENT for the caller', async () => {
    await expect(client.checkCommand(request(''))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('no command to check') });
    await expect(client.checkCommand(request('x'.repeat(2_001)))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('at most 2000 (commands.maxCommandLineChars') });
    await expect(client.checkCommand(request('ls', { workingDirectory: '/etc' }))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('working_directory "/etc" is absolute') });
    await expect(client.checkCommand(request('ls', { workingDirectory: '.git/hooks' }))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('is inside version-control metadata') });
  });

  it('keeps serving after hostile input', async () => {
    const hostile = ['$(' + '$('.repeat(400) + ')'.repeat(401), '\u0000\u0001 | ;;', '"'.repeat(1_999), '`'.repeat(5), 'a'.repeat(2_000)];
    for (const commandLine of hostile) {
      const response = await client.checkCommand(request(commandLine));
      expect([SafetyVerdict.SAFETY_VERDICT_ALLOW, SafetyVerdict.SAFETY_VERDICT_BLOCK, SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL]).toContain(response.verdict);
    }
    await expect(client.checkCommand(request('ls'))).resolves.toMatchObject({ verdict: SafetyVerdict.SAFETY_VERDICT_ALLOW });
  });
});
