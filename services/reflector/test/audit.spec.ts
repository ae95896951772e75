import { afterEach, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { loadPrompts } from '@ratchet/prompting';
import { createClient, InProcessTransport } from '@ratchet/bus';
import { Confidence, Language, ReflectorServiceDefinition, SafetyVerdict, Severity, type AuditRequest, type SafetyFinding } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { ScriptedModel, type ScriptedTurn } from '@ratchet/llm';
import { hostService, type RunningService } from '@ratchet/runtime';
import { auditReply } from '@ratchet/testing';
import { createReflectorService } from '../src';

const prompts = loadPrompts(path.resolve(__dirname, '../../../config'));

const files = [
  {
    path: 'app.py',
    content: [
      'import sqlite3',
      'import subprocess',
      '',
      'def find(db, name):',
      '    return db.execute("SELECT * FROM users WHERE name = \'" + name + "\'").fetchall()',
      '',
      'def ping(host):',
      '    return subprocess.run("ping -c 1 " + host, shell=True)',
      '',
      'def version():',
      '    return subprocess.run("git --version", shell=True)',
      '',
    ].join('\n'),
  },
];

function scannerFinding(overrides: Partial<SafetyFinding>): SafetyFinding {
  return {
    ruleId: 'py.subprocess-shell',
    severity: Severity.SEVERITY_HIGH,
    path: 'app.py',
    line: 8,
    column: 12,
    message: 'subprocess with shell=True',
    snippet: 'subprocess.run("ping -c 1 " + host, shell=True)',
    remediation: 'pass the arguments as a list without shell=True',
    cwe: 'CWE-78',
    confidence: Confidence.CONFIDENCE_HIGH,
    tool: 'bandit',
    action: SafetyVerdict.SAFETY_VERDICT_WARN,
    preExisting: false,
    ...overrides,
  };
}

function request(overrides: Partial<AuditRequest> = {}): AuditRequest {
  return {
    taskId: 'task-1',
    iteration: 2,
    goal: 'look users up by name and ping hosts',
    language: Language.LANGUAGE_PYTHON,
    baseFiles: [],
    files,
    scannerFindings: [scannerFinding({}), scannerFinding({ line: 11, snippet: 'subprocess.run("git --version", shell=True)' })],
    maxTokens: 0,
    ...overrides,
  };
}

describe('auditor over the in-process bus', () => {
  const running: RunningService[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((service) => service.stop(100)));
  });

  function serve(turns: ScriptedTurn[]) {
    const model = new ScriptedModel(turns, { name: 'auditor-test' });
    const other = new ScriptedModel([]);
    const transport = new InProcessTransport();
    const service = createReflectorService({
      roleModel: { model: other, modelName: 'reflector-model', temperature: 0, maxTokens: 1000 },
      reviewerModel: { model: other, modelName: 'reviewer-model', temperature: 0, maxTokens: 1000 },
      auditorModel: { model, modelName: 'auditor-model', temperature: 0, maxTokens: 1200 },
      prompts,
    });
    running.push(hostService({ name: 'reflector', version: 'test', definition: ReflectorServiceDefinition, implementation: service.implementation }, { transport }));
    return { model, other, client: createClient(transport, ReflectorServiceDefinition) };
  }

  it("combines the scanner findings, judged one by one, with its own; high severity blocks unless judged a false positive", async () => {
    const { model, other, client } = serve([
      {
        role: 'auditor',
        reply: auditReply(
          [
            { severity: 'critical', path: 'app.py', line: 5, category: 'A03:2021-Injection', cwe: 'CWE-89', message: 'the name is concatenated into SQL', suggestion: 'use a ? parameter' },
            // The same as scanner finding 1: dropped, the scanner's finding carries the verdict.
            { severity: 'high', path: 'app.py', line: 8, cwe: 'cwe-78', message: 'shell injection through host' },
            { severity: 'medium', path: 'app.py', line: 7, cwe: '918', message: 'host is not checked against an allow-list' },
          ],
          [
            { number: 1, real: true, reason: 'host comes from the caller' },
            { number: 2, real: false, reason: 'a constant command line' },
          ],
          'SQL injection and command injection',
        ),
        usage: { promptTokens: 900, completionTokens: 300 },
      },
    ]);
    const response = await client.audit(request());
    expect(response.replyFailure).toBeUndefined();
    expect(response.summary).toBe('SQL injection and command injection');
    expect(response.usage).toMatchObject({ promptTokens: 900, completionTokens: 300, modelCalls: 1 });
    expect(response.findings).toEqual([
      { severity: Severity.SEVERITY_CRITICAL, path: 'app.py', line: 5, category: 'A03:2021-Injection', cwe: 'CWE-89', message: 'the name is concatenated into SQL', suggestion: 'use a ? parameter', blocking: true, source: 'auditor' },
      {
        severity: Severity.SEVERITY_HIGH,
        path: 'app.py',
        line: 8,
        category: 'A03:2021-Injection',
        cwe: 'CWE-78',
        message: 'subprocess with shell=True Auditor: a real issue: host comes from the caller',
        suggestion: 'pass the arguments as a list without shell=True',
        blocking: true,
        source: 'py.subprocess-shell',
      },
      expect.objectContaining({ severity: Severity.SEVERITY_HIGH, line: 11, blocking: false, message: 'subprocess with shell=True Auditor: a false positive: a constant command line', source: 'py.subprocess-shell' }),
      expect.objectContaining({ severity: Severity.SEVERITY_MEDIUM, line: 7, cwe: 'CWE-918', category: 'A10:2021-Server-Side Request Forgery', blocking: false, source: 'auditor' }),
    ]);
    expect(other.calls).toHaveLength(0);
    const sent = model.calls[0]!.request;
    expect(sent.role).toBe('auditor');
    expect(sent.responseFormat?.name).toBe('auditor_reply');
    const system = sent.messages[0]!.content;
    for (const name of ['A01:2021-Broken Access Control', 'A03:2021-Injection', 'A10:2021-Server-Side Request Forgery', 'CWE-78', 'CWE-89', 'CWE-94', 'CWE-22', 'CWE-502', 'CWE-798', 'CWE-327', 'CWE-328', 'CWE-918']) expect(system).toContain(name);
    const user = sent.messages[1]!.content;
    expect(user).toContain('1. [py.subprocess-shell, from bandit, high, CWE-78] app.py:8: subprocess with shell=True\n   code: subprocess.run("ping -c 1 " + host, shell=True)');
    expect(user).toContain('2. [py.subprocess-shell, from bandit, high, CWE-78] app.py:11:');
    expect(user).toContain('+++ b/app.py (new file, 11 lines)');
  });

  it('must judge every scanner finding: a reply that leaves one out goes back for repair', async () => {
    const { model, client } = serve([
      { role: 'auditor', reply: auditReply([], [{ number: 1, real: true }]) },
      { role: 'auditor', expect: 'no verdict on scanner finding(s) 2', reply: auditReply([], [{ number: 1, real: true }, { number: 2, real: true }]) },
    ]);
    const response = await client.audit(request());
    expect(response.findings.filter((finding) => finding.blocking)).toHaveLength(2);
    expect(model.remaining).toBe(0);
  });

  it('answers with the reply failure and the tokens of both rounds when the reply stays invalid', async () => {
    const { client } = serve([
      { role: 'auditor', reply: '{"summary": "ok"', usage: { promptTokens: 40, completionTokens: 4 } },
      { role: 'auditor', reply: '{"summary": "ok", "findings": [], "scannerVerdicts": []}', usage: { promptTokens: 60, completionTokens: 6 } },
    ]);
    const response = await client.audit(request());
    expect(response.findings).toEqual([]);
    expect(response.replyFailure).toMatchObject({ message: expect.stringContaining('auditor_reply') });
    expect(response.replyFailure?.message).toContain('no verdict on scanner finding(s) 1, 2');
    expect(response.usage).toMatchObject({ promptTokens: 100, completionTokens: 10, modelCalls: 2 });
  });

  it('audits scanner findings even without a change, skips the model with neither, and refuses an empty goal', async () => {
    const { model, client } = serve([{ role: 'auditor', expect: '(no change)', reply: auditReply([], [{ number: 1, real: true }]) }]);
    // The files are unchanged, so the finding is in code this change did not touch: recorded, never blocking.
    const unchanged = await client.audit(request({ baseFiles: files, scannerFindings: [scannerFinding({})] }));
    expect(unchanged.findings).toEqual([expect.objectContaining({ path: 'app.py', line: 8, blocking: false })]);
    const nothing = await client.audit(request({ baseFiles: files, scannerFindings: [] }));
    expect(nothing).toMatchObject({ findings: [], summary: expect.stringContaining('nothing to audit'), usage: { modelCalls: 0 } });
    await expect(client.audit(request({ goal: ' ' }))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    expect(model.calls).toHaveLength(1);
  });
});
