import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { createClient, InProcessBroker, InProcessTransport, type ServiceImplementation } from '@ratchet/bus';
import { CheckCodeRequest, Language, SafetyServiceDefinition, SafetyVerdict, Severity } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { hostService, type RunningService } from '@ratchet/runtime';
import { createSafetyService, loadParsers, RuleId, type SafetyService } from '../src';

describe('CheckCode over the in-process bus', () => {
  const broker = new InProcessBroker();
  const serverTransport = new InProcessTransport(broker);
  const clientTransport = new InProcessTransport(broker);
  const client = createClient(clientTransport, SafetyServiceDefinition, { maxAttempts: 1 });
  let service: SafetyService;
  let running: RunningService;

  beforeAll(async () => {
    service = await createSafetyService({ limits: { maxFileBytes: 100_000 } });
    // What a host needs: the implementation is a ServiceImplementation without Health.
    const implementation: Omit<ServiceImplementation<typeof SafetyServiceDefinition>, 'health'> = service.implementation;
    running = hostService({ name: 'safety', version: 'test', definition: SafetyServiceDefinition, implementation }, { transport: serverTransport });
    await running.server.ready;
  });

  afterAll(async () => {
    await running.stop(1_000);
    await service.close();
    await clientTransport.close();
    await serverTransport.close();
  });

  it('answers with the verdict and the findings as proto values', async () => {
    const response = await client.checkCode(
      CheckCodeRequest.fromPartial({
        taskId: 't-1',
        iteration: 2,
        language: Language.LANGUAGE_PYTHON,
        files: [
          { path: 'app.py', content: 'import os\n\nos.system("x")\n' },
          { path: 'tests/test_app.py', content: 'def test_x(:\n    pass\n' },
        ],
      }),
      { timeoutMs: 10_000 },
    );
    expect(response).toEqual({
      verdict: SafetyVerdict.SAFETY_VERDICT_BLOCK,
      findings: [
        expect.objectContaining({ ruleId: RuleId.PYTHON_OS_COMMAND, severity: Severity.SEVERITY_HIGH, path: 'app.py', line: 3, column: 1, snippet: 'os.system("x")' }),
        expect.objectContaining({ ruleId: RuleId.PARSE_ERROR, severity: Severity.SEVERITY_LOW, path: 'tests/test_app.py', line: 1 }),
      ],
    });
  });

  it('answers WARN for lower findings only, and ALLOW for clean code or no files', async () => {
    const warn = await client.checkCode(CheckCodeRequest.fromPartial({ language: Language.LANGUAGE_TYPESCRIPT, files: [{ path: 'a.ts', content: 'const x = (;' }] }));
    expect(warn.verdict).toBe(SafetyVerdict.SAFETY_VERDICT_WARN);
    const allow = await client.checkCode(CheckCodeRequest.fromPartial({ language: Language.LANGUAGE_JAVASCRIPT, files: [{ path: 'a.js', content: "eval('1 + 1');" }] }));
    expect(allow).toEqual({ verdict: SafetyVerdict.SAFETY_VERDICT_ALLOW, findings: [] });
    const empty = await client.checkCode(CheckCodeRequest.fromPartial({ language: Language.LANGUAGE_PYTHON }));
    expect(empty).toEqual({ verdict: SafetyVerdict.SAFETY_VERDICT_ALLOW, findings: [] });
  });

  it('turns oversized input into INVALID_ARGUMENT for the caller, with the configured limit', async () => {
    const request = CheckCodeRequest.fromPartial({ language: Language.LANGUAGE_PYTHON, files: [{ path: 'big.py', content: 'x'.repeat(100_001) }] });
    await expect(client.checkCode(request)).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('big.py is 100001 bytes') });
  });

  it('serves CheckCommand (see check-command.spec.ts) and CheckDependencies (see dependency-service.spec.ts)', async () => {
    await expect(client.checkCommand({ taskId: 't', argv: ['ls'], workingDirectory: '', language: Language.LANGUAGE_PYTHON, commandLine: '' })).resolves.toEqual({
      verdict: SafetyVerdict.SAFETY_VERDICT_ALLOW,
      findings: [],
      reason: 'allowed',
    });
    await expect(client.checkDependencies({ taskId: 't', language: Language.LANGUAGE_PYTHON, dependencies: [], files: [], approved: [], baseFiles: [] })).resolves.toEqual({
      verdict: SafetyVerdict.SAFETY_VERDICT_ALLOW,
      findings: [],
      decisions: [],
    });
  });
});

describe('createSafetyService', () => {
  it('shares parsers it is given and does not close them', async () => {
    const parsers = await loadParsers();
    try {
      const service = await createSafetyService({ parsers });
      await service.close();
      const again = await createSafetyService({ parsers });
      const controller = new AbortController();
      const response = await again.implementation.checkCode(CheckCodeRequest.fromPartial({ files: [{ path: 'a.js', content: 'new Function(body)' }] }), {
        requestId: 'r',
        deadline: Date.now() + 5_000,
        signal: controller.signal,
        headers: {},
      });
      expect(response.findings.map((found) => found.ruleId)).toEqual([RuleId.JS_FUNCTION_CONSTRUCTOR]);
    } finally {
      parsers.close();
    }
  });

  it('stops a check whose call was given up on', async () => {
    const service = await createSafetyService();
    try {
      const controller = new AbortController();
      controller.abort();
      const call = service.implementation.checkCode(CheckCodeRequest.fromPartial({ files: [{ path: 'a.py', content: 'x = 1' }] }), { requestId: 'r', deadline: Date.now(), signal: controller.signal, headers: {} });
      await expect(call).rejects.toMatchObject({ code: ErrorCode.CANCELLED });
    } finally {
      await service.close();
    }
  });

  it('refuses to check once closed', async () => {
    const service = await createSafetyService();
    await service.close();
    await service.close();
    const call = service.implementation.checkCode(CheckCodeRequest.fromPartial({ files: [{ path: 'a.py', content: 'x = 1' }] }), { requestId: 'r', deadline: Date.now() + 5_000, signal: new AbortController().signal, headers: {} });
    await expect(call).rejects.toMatchObject({ code: ErrorCode.FAILED_PRECONDITION });
  });

  it('refuses limits that are not positive integers', async () => {
    await expect(createSafetyService({ limits: { maxFiles: 0, maxFileBytes: 1.5 } })).rejects.toMatchObject({ code: ErrorCode.CONFIG_INVALID, message: expect.stringContaining('maxFiles=0, maxFileBytes=1.5') });
  });
});
