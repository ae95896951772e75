import { afterEach, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { conversationTokens, loadPrompts } from '@ratchet/prompting';
import { createClient, InProcessTransport } from '@ratchet/bus';
import { Language, ReflectorServiceDefinition, Severity, type ReviewRequest } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { ScriptedModel, type ScriptedTurn } from '@ratchet/llm';
import { hostService, type RunningService } from '@ratchet/runtime';
import { auditReply, changeReport, largeWorkspace, reportModule, reviewReply } from '@ratchet/testing';
import { createReflectorService } from '../src';

const prompts = loadPrompts(path.resolve(__dirname, '../../../config'));

const baseFiles = [
  { path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' },
  { path: 'helpers.py', content: 'def unused():\n    pass\n' },
];
const files = [
  { path: 'calc.py', content: 'def add(a, b):\n    return a + b\n\n\ndef divide(a, b):\n    return a / b\n' },
  { path: 'helpers.py', content: 'def unused():\n    pass\n' },
  { path: 'pkg/util.py', content: 'def clamp(value, low, high):\n    return max(low, min(value, high))\n' },
];

function request(overrides: Partial<ReviewRequest> = {}): ReviewRequest {
  return {
    taskId: 'task-1',
    iteration: 1,
    goal: 'add divide(a, b) to the calculator; dividing by zero raises ValueError',
    language: Language.LANGUAGE_PYTHON,
    spec: undefined,
    plan: { summary: 'divide in calc.py', steps: [{ number: 1, description: 'write divide', paths: ['calc.py'] }], files: [], testStrategy: 'pytest', language: 1, dependencies: [], appliedLessonIds: [], changesTests: false, changesTestsReason: '' },
    baseFiles,
    files,
    maxTokens: 0,
    ...overrides,
  };
}

describe('reviewer over the in-process bus', () => {
  const running: RunningService[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((service) => service.stop(100)));
  });

  function serve(turns: ScriptedTurn[]) {
    const model = new ScriptedModel(turns, { name: 'reviewer-test' });
    const reflector = new ScriptedModel([]);
    const auditor = new ScriptedModel([]);
    const transport = new InProcessTransport();
    const service = createReflectorService({
      roleModel: { model: reflector, modelName: 'reflector-model', temperature: 0, maxTokens: 1000 },
      reviewerModel: { model, modelName: 'reviewer-model', temperature: 0, maxTokens: 1500, price: { promptPerMillion: 1, completionPerMillion: 2 } },
      auditorModel: { model: auditor, modelName: 'auditor-model', temperature: 0, maxTokens: 1000 },
      prompts,
    });
    running.push(hostService({ name: 'reflector', version: 'test', definition: ReflectorServiceDefinition, implementation: service.implementation }, { transport }));
    return { model, reflector, auditor, client: createClient(transport, ReflectorServiceDefinition) };
  }

  it('reads the diff with the goal, spec and plan on its own model, and returns findings most severe first with the blocking rule applied', async () => {
    const { model, reflector, auditor, client } = serve([
      {
        role: 'reviewer',
        reply: reviewReply(
          [
            { severity: 'low', path: 'calc.py', line: 5, category: 'style', message: 'name the parameters numerator and denominator', blocking: true },
            { severity: 'medium', path: 'calc.py', line: 6, category: 'correctness', message: 'divide(1, 0) raises ZeroDivisionError, the goal asks for ValueError', suggestion: 'check b == 0 and raise ValueError', blocking: true },
            { severity: 'High', path: 'pkg/util.py', line: 2, category: 'Bug', message: 'clamp ignores low > high' },
            { severity: 'medium', path: 'calc.py', line: 1, category: 'design', message: 'split the module', blocking: true },
          ],
          'divide misses the zero case',
        ),
        usage: { promptTokens: 800, completionTokens: 200 },
      },
    ]);
    const spec = { summary: 'divide', behaviour: 'divide(a, b) returns a / b', inputs: '', outputs: '', interface: ['divide(a, b) -> float'], edgeCases: ['b == 0 raises ValueError'], acceptanceCriteria: ['divide(6, 3) == 2'], assumptions: [] };
    const response = await client.review(request({ spec }));
    expect(response.replyFailure).toBeUndefined();
    expect(response.summary).toBe('divide misses the zero case');
    expect(response.usage).toEqual({ promptTokens: 800, completionTokens: 200, costUsd: 0.0012, modelCalls: 1 });
    expect(response.findings).toEqual([
      { severity: Severity.SEVERITY_HIGH, path: 'pkg/util.py', line: 2, category: 'correctness', cwe: '', message: 'clamp ignores low > high', suggestion: '', blocking: true, source: 'reviewer' },
      expect.objectContaining({ severity: Severity.SEVERITY_MEDIUM, path: 'calc.py', line: 6, category: 'correctness', blocking: true, suggestion: 'check b == 0 and raise ValueError' }),
      expect.objectContaining({ severity: Severity.SEVERITY_MEDIUM, path: 'calc.py', line: 1, category: 'design', blocking: false }),
      expect.objectContaining({ severity: Severity.SEVERITY_LOW, category: 'style', blocking: false }),
    ]);
    expect(reflector.calls).toHaveLength(0);
    expect(auditor.calls).toHaveLength(0);
    const sent = model.calls[0]!.request;
    expect(sent.role).toBe('reviewer');
    expect(sent.responseFormat?.name).toBe('reviewer_reply');
    expect(sent.maxTokens).toBe(1500);
    const user = sent.messages[1]!.content;
    expect(user).toContain('Goal: add divide(a, b) to the calculator');
    expect(user).toContain('Edge cases:\n- b == 0 raises ValueError');
    expect(user).toContain('1. write divide [calc.py]');
    expect(user).toContain('+++ b/calc.py\n@@ -1,2 +1,6 @@\n     1 | def add(a, b):\n     2 |     return a + b\n+    3 | \n+    4 | \n+    5 | def divide(a, b):\n+    6 |     return a / b');
    expect(user).toContain('+++ b/pkg/util.py (new file, 2 lines)\n+    1 | def clamp(value, low, high):');
    expect(user).not.toContain('def unused');
  });

  it('re-points findings on paths outside the change and clamps their lines; a finding on an untouched file never blocks', async () => {
    const { client } = serve([
      {
        role: 'reviewer',
        reply: reviewReply([
          { severity: 'critical', path: 'b/calc.py', line: 400, message: 'divides by zero' },
          { severity: 'high', path: 'util.py', line: -3, message: 'clamp is wrong' },
          { severity: 'high', path: 'helpers.py', line: 1, message: 'unused is never called' },
          { severity: 'high', path: 'src/invented.py', line: 12, message: 'an invented file' },
        ]),
      },
    ]);
    const response = await client.review(request());
    const byMessage = new Map(response.findings.map((finding) => [finding.message, finding]));
    expect(byMessage.get('divides by zero')).toMatchObject({ path: 'calc.py', line: 6, blocking: true });
    expect(byMessage.get('clamp is wrong')).toMatchObject({ path: 'pkg/util.py', line: 0, blocking: true });
    expect(byMessage.get('unused is never called')).toMatchObject({ path: 'helpers.py', line: 1, blocking: false });
    expect(byMessage.get('(src/invented.py:12) an invented file')).toMatchObject({ path: '', line: 0, blocking: true });
    expect(response.findings).toHaveLength(4);
  });

  it('sends back a severity it cannot read, and answers with the reply failure and the tokens of both rounds when the reply stays invalid', async () => {
    const repaired = serve([
      { role: 'reviewer', reply: reviewReply([{ severity: 'urgent', path: 'calc.py', line: 6, message: 'zero' }]) },
      { role: 'reviewer', expect: 'findings.0.severity', reply: reviewReply([{ severity: 'critical', path: 'calc.py', line: 6, message: 'zero' }]) },
    ]);
    expect((await repaired.client.review(request())).findings[0]).toMatchObject({ severity: Severity.SEVERITY_CRITICAL, blocking: true });

    const { client } = serve([
      { role: 'reviewer', reply: 'Looks good to me!', usage: { promptTokens: 100, completionTokens: 5 } },
      { role: 'reviewer', reply: '{"summary": "fine", "findings": [{"severity": "high"}]}', usage: { promptTokens: 150, completionTokens: 10 } },
    ]);
    const response = await client.review(request());
    expect(response.findings).toEqual([]);
    expect(response.summary).toBe('');
    expect(response.replyFailure).toMatchObject({ message: expect.stringContaining('reviewer_reply'), truncated: false });
    expect(response.usage).toMatchObject({ promptTokens: 250, completionTokens: 15, modelCalls: 2 });
  });

  it('does not call the model when nothing changed, and refuses an empty goal', async () => {
    const { model, client } = serve([]);
    const response = await client.review(request({ files: baseFiles }));
    expect(response).toMatchObject({ findings: [], summary: expect.stringContaining('Nothing changed'), usage: { modelCalls: 0 } });
    await expect(client.review(request({ goal: '' }))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('goal is empty') });
    expect(model.calls).toHaveLength(0);
  });
});

describe('reviewer and auditor prompts on a change to many large files', () => {
  const running: RunningService[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((service) => service.stop(100)));
  });

  // 20 modules of about 5,000 tokens each, each changed in one function in its middle, and a new module of about 12,000.
  const base = largeWorkspace(25).filter((file) => file.path.startsWith('app/'));
  const changes = base.map((file, index) => {
    const name = `report_${/records_(\d+)/.exec(file.path)![1]}`;
    return { path: file.path, name, ...changeReport(file.content, name, 30 + index, `CHANGED_${index}`) };
  });
  const added = { path: 'app/new_reports.py', content: reportModule('new_report', 150) };
  const files = [...changes.map((change) => ({ path: change.path, content: change.content })), added];

  async function serve(role: 'reviewer' | 'auditor', reply: string) {
    const model = new ScriptedModel([{ role, reply }]);
    const other = { model: new ScriptedModel([]), modelName: 'other', temperature: 0, maxTokens: 1000 };
    const roleModel = { model, modelName: role, temperature: 0, maxTokens: 1000 };
    const transport = new InProcessTransport();
    const service = createReflectorService({ roleModel: other, reviewerModel: role === 'reviewer' ? roleModel : other, auditorModel: role === 'auditor' ? roleModel : other, prompts });
    running.push(hostService({ name: 'reflector', version: 'test', definition: ReflectorServiceDefinition, implementation: service.implementation }, { transport }));
    return { model, client: createClient(transport, ReflectorServiceDefinition, { defaultTimeoutMs: 60_000 }) };
  }

  it('keeps the review under reviewer.promptBudgetTokens (10,000) with every changed line in it, and names what it leaves out', async () => {
    const { model, client } = await serve('reviewer', reviewReply([]));
    await client.review(request({ baseFiles: base, files }));
    const messages = model.calls[0]!.request.messages;
    expect(conversationTokens(messages)).toBeLessThanOrEqual(10_000);
    const user = messages[1]!.content;
    for (const change of changes) expect(user).toContain(`+${String(change.line).padStart(5)} |     lines = ["${/CHANGED_\d+/.exec(change.content)![0]}"]`);
    expect(user).toContain('+++ b/app/new_reports.py (new file, 1348 lines)\n+    1 | def new_report_0(rows, width=0):');
    expect(user).toMatch(/\.\.\. \(over the review's budget, not shown: new lines \d+-1348 of app\/new_reports\.py\)/);
  });

  it('keeps the audit under auditor.promptBudgetTokens (10,000) with the changed lines and every scanner finding it judges', async () => {
    const finding = { ruleId: 'py.eval', severity: Severity.SEVERITY_HIGH, path: changes[3]!.path, line: changes[3]!.line, column: 1, message: 'eval of input', snippet: 'eval(x)', remediation: '', cwe: 'CWE-94', confidence: 0, tool: 'bandit', action: 0, preExisting: false };
    const { model, client } = await serve('auditor', auditReply([], [{ number: 1, real: false }]));
    await client.audit({ taskId: 't', iteration: 1, goal: 'reports start with a marker', language: Language.LANGUAGE_PYTHON, baseFiles: base, files, scannerFindings: [finding], maxTokens: 0 });
    const messages = model.calls[0]!.request.messages;
    expect(conversationTokens(messages)).toBeLessThanOrEqual(10_000);
    const user = messages[1]!.content;
    for (const change of changes) expect(user).toContain(`lines = ["${/CHANGED_\d+/.exec(change.content)![0]}"]`);
    expect(user).toContain(`1. [py.eval, from bandit, high, CWE-94] ${changes[3]!.path}:${changes[3]!.line}: eval of input`);
  });
});

describe('reviewer and auditor prompt placeholders', () => {
  it('fail at start when a prompt uses a placeholder the service does not fill', () => {
    const model = { model: new ScriptedModel([]), modelName: 'm', temperature: 0, maxTokens: 10 };
    const options = { roleModel: model, reviewerModel: model, auditorModel: model };
    expect(() => createReflectorService({ ...options, prompts: { ...prompts, reviewer: { system: '{{goal}}', user: '{{diff}}' } } })).toThrow(/prompts.yaml reviewer: unknown placeholder\(s\) \{\{diff\}\}/);
    expect(() => createReflectorService({ ...options, prompts: { ...prompts, auditor: { system: '{{goal}}', user: '{{findings}}' } } })).toThrow(/prompts.yaml auditor: unknown placeholder\(s\) \{\{findings\}\}/);
  });
});
