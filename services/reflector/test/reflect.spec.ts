import { afterEach, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { countTokens, failureSignature } from '@ratchet/agent';
import { conversationTokens, loadPrompts } from '@ratchet/prompting';
import { createClient, InProcessTransport } from '@ratchet/bus';
import { Language, ReflectorServiceDefinition, Severity, TestCaseStatus, type ReflectRequest, type TestReport } from '@ratchet/contracts';
import { ScriptedModel, type ScriptedTurn } from '@ratchet/llm';
import { hostService, type RunningService } from '@ratchet/runtime';
import { changeReport, largeWorkspace } from '@ratchet/testing';
import { createReflectorService, outputForPrompt, type ReflectorSettings } from '../src';

const prompts = loadPrompts(path.resolve(__dirname, '../../../config'));
// Reflect never calls the reviewer's or the auditor's model.
const unused = { model: new ScriptedModel([]), modelName: 'unused', temperature: 0, maxTokens: 10 };

function report(message: string, directory: string): TestReport {
  return {
    framework: 'pytest',
    total: 2,
    passed: 1,
    failed: 1,
    errored: 0,
    skipped: 0,
    duration: undefined,
    parsed: true,
    parseError: '',
    cases: [
      { name: 'test_ok', suite: 's', file: '', status: TestCaseStatus.TEST_CASE_STATUS_PASSED, duration: undefined, failureMessage: '', failureDetail: '' },
      { name: 'test_first_use', suite: 's', file: '', status: TestCaseStatus.TEST_CASE_STATUS_FAILED, duration: undefined, failureMessage: `${message} '${directory}/todo.json'`, failureDetail: '' },
    ],
  };
}

const reflection = {
  rootCause: 'load() opens a file that does not exist yet',
  hypothesis: 'returning [] for a missing file fixes it',
  fixDirection: 'check os.path.exists first',
  confidence: 0.8,
  replanRecommended: false,
  lesson: { title: 'Missing data file means empty', body: 'Treat a missing JSON file as an empty collection.', tags: ['json'] },
  relevantLessonIds: ['lesson-9', 'invented'],
};

describe('reflector over the in-process bus', () => {
  let running: RunningService | undefined;
  afterEach(async () => {
    await running?.stop(100);
  });

  function serve(turns: ScriptedTurn[]) {
    const model = new ScriptedModel(turns);
    const transport = new InProcessTransport();
    const service = createReflectorService({ roleModel: { model, modelName: 'm', temperature: 0, maxTokens: 1000 }, reviewerModel: unused, auditorModel: unused, prompts });
    running = hostService({ name: 'reflector', version: 'test', definition: ReflectorServiceDefinition, implementation: service.implementation }, { transport });
    return { model, client: createClient(transport, ReflectorServiceDefinition) };
  }

  function request(testReport: TestReport): ReflectRequest {
    return {
      taskId: 't',
      iteration: 1,
      goal: 'todo cli',
      language: Language.LANGUAGE_PYTHON,
      plan: undefined,
      files: [{ path: 'todo.py', content: 'import json\n' }],
      testReport,
      error: undefined,
      safetyFindings: [],
      stderrExcerpt: 'Traceback ...',
      previousReflections: [],
      lessons: [{ id: 'lesson-9', title: 't', body: 'b', errorSignature: '', tags: [], language: 1, evidence: [], stats: undefined, createdAt: undefined, updatedAt: undefined, kind: 0, status: 0, scope: '', embedder: '', weight: 0, standing: [] }],
      maxTokens: 0,
      testDisputes: [],
      reviewFindings: [],
    };
  }

  it('returns cause, hypothesis and a candidate lesson carrying a signature computed from the evidence', async () => {
    const { model, client } = serve([
      { role: 'reflector', expect: ['FileNotFoundError'], reply: JSON.stringify(reflection) },
      { role: 'reflector', reply: JSON.stringify(reflection) },
    ]);
    const first = await client.reflect(request(report('FileNotFoundError: [Errno 2] No such file or directory:', '/tmp/pytest-1/test_a0')));
    const second = await client.reflect(request(report('FileNotFoundError: [Errno 2] No such file or directory:', '/tmp/pytest-7/test_b3')));
    expect(first.reflection?.errorSignature).toBe("FileNotFoundError: [Errno <n>] No such file or directory: '<v>'");
    expect(second.reflection?.errorSignature).toBe(first.reflection?.errorSignature);
    expect(first.reflection?.candidateLesson).toMatchObject({ title: 'Missing data file means empty', errorSignature: first.reflection?.errorSignature, language: Language.LANGUAGE_PYTHON, tags: ['json'] });
    expect(first.reflection?.relevantLessonIds).toEqual(['lesson-9']);
    expect(model.remaining).toBe(0);
    // One copy of the evidence: the report has the tracebacks, so the raw output is left out.
    const prompt = model.calls[0]!.request.messages.map((message) => message.content).join('\n');
    expect(prompt).not.toContain('Traceback ...');
  });
});

describe('reflecting on blocking review and audit findings', () => {
  let running: RunningService | undefined;
  afterEach(async () => {
    await running?.stop(100);
  });

  it('shows them like a failing test, with severity, place, CWE and the fix, and leaves the section out without them', async () => {
    const model = new ScriptedModel([
      { role: 'reflector', reply: JSON.stringify(reflection) },
      { role: 'reflector', reply: JSON.stringify(reflection) },
    ]);
    const transport = new InProcessTransport();
    running = hostService(
      { name: 'reflector', version: 'test', definition: ReflectorServiceDefinition, implementation: createReflectorService({ roleModel: { model, modelName: 'm', temperature: 0, maxTokens: 1000 }, reviewerModel: unused, auditorModel: unused, prompts }).implementation },
      { transport },
    );
    const client = createClient(transport, ReflectorServiceDefinition);
    const base: ReflectRequest = {
      taskId: 't',
      iteration: 1,
      goal: 'todo cli',
      language: Language.LANGUAGE_PYTHON,
      plan: undefined,
      files: [{ path: 'todo.py', content: 'import os\n' }],
      testReport: undefined,
      error: undefined,
      safetyFindings: [],
      stderrExcerpt: '',
      previousReflections: [],
      lessons: [],
      maxTokens: 0,
      testDisputes: [],
      reviewFindings: [],
    };
    const finding = { severity: Severity.SEVERITY_HIGH, path: 'todo.py', line: 12, category: 'A03:2021-Injection', cwe: 'CWE-78', message: 'the title reaches os.system', suggestion: 'use subprocess.run with a list', blocking: true, source: 'auditor' };
    await client.reflect({ ...base, reviewFindings: [finding] });
    await client.reflect(base);
    const withFindings = model.calls[0]!.request.messages.map((message) => message.content).join('\n');
    expect(withFindings).toContain('Review and audit findings on the last attempt (a blocking one counts like a failing test');
    expect(withFindings).toContain('- [high, blocking from auditor] todo.py:12 (A03:2021-Injection, CWE-78): the title reaches os.system Fix: use subprocess.run with a list');
    expect(model.calls[0]!.request.messages[0]!.content).toContain('count like a failing test');
    expect(model.calls[1]!.request.messages[1]!.content).not.toContain('Review and audit findings');
  });
});

describe('the reflector prompt on a workspace of many large files', () => {
  const running: RunningService[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((service) => service.stop(100)));
  });

  // 60 changed modules and 15 test files of about 5,000 tokens each: some 375,000 tokens of code.
  const workspace = largeWorkspace(75);
  const module = workspace[7]!;
  const changed = changeReport(module.content, 'report_7', 31, 'TOTALS');
  const test = workspace[9]!;
  const testLine = test.content.split('\n').indexOf('def test_report_9_12(rows, width=12):') + 6;
  const failure = (file: string) => ({
    taskId: 't',
    iteration: 2,
    goal: 'every report starts with a TOTALS line',
    language: Language.LANGUAGE_PYTHON,
    plan: undefined,
    files: workspace.map((other) => (other === module ? { path: module.path, content: changed.content } : other)),
    testReport: {
      ...report('x', 'y'),
      cases: [
        {
          name: 'test_report_9_12',
          suite: '',
          file,
          status: TestCaseStatus.TEST_CASE_STATUS_FAILED,
          duration: undefined,
          failureMessage: 'AssertionError: assert [] == ["TOTALS"]',
          failureDetail: `${file}:${testLine}: in test_report_9_12\n    lines.append(text[:width])\n${module.path}:${changed.line}: in report_7_31\nE   AssertionError`,
        },
      ],
    },
    error: undefined,
    safetyFindings: [],
    stderrExcerpt: 'F'.repeat(50_000),
    previousReflections: [],
    lessons: [],
    maxTokens: 0,
    testDisputes: [],
    reviewFindings: [],
  });

  async function reflectOn(request: ReflectRequest, settings?: ReflectorSettings) {
    const model = new ScriptedModel([{ role: 'reflector', reply: JSON.stringify(reflection) }]);
    const transport = new InProcessTransport();
    const service = createReflectorService({ roleModel: { model, modelName: 'm', temperature: 0, maxTokens: 1000 }, reviewerModel: unused, auditorModel: unused, prompts, ...(settings === undefined ? {} : { settings }) });
    running.push(hostService({ name: 'reflector', version: 'test', definition: ReflectorServiceDefinition, implementation: service.implementation }, { transport }));
    const response = await createClient(transport, ReflectorServiceDefinition, { defaultTimeoutMs: 60_000 }).reflect(request);
    expect(response.reflection?.rootCause).toBe(reflection.rootCause);
    const sent = model.calls[0]!.request;
    // The reply schema travels with the call: it is inside the budget too.
    return { messages: sent.messages, schemaTokens: countTokens(JSON.stringify(sent.responseFormat?.schema)) };
  }

  it('stays under reflector.promptBudgetTokens (8,000) and shows the lines the traceback names, inside their functions', async () => {
    const { messages, schemaTokens } = await reflectOn(failure(test.path));
    expect(conversationTokens(messages) + schemaTokens).toBeLessThanOrEqual(8_000);
    const user = messages[1]!.content;
    expect(user).toContain(`${changed.line} >     lines = ["TOTALS"]`);
    expect(user).toContain(`${changed.line - 2} | def report_7_31(rows, width=31):`);
    expect(user).toContain(`${testLine} >         lines.append(text[:width])`);
    expect(user).toContain(`--- ${module.path} (excerpt: `);
    expect(user).toContain('Map of the other files (their definitions, most relevant first):');
    // The report holds the failure: the 50,000 characters of progress marks are left out.
    expect(user).not.toContain('FFFFFFFF');
  });

  it('keeps to a smaller configured budget', async () => {
    const { messages, schemaTokens } = await reflectOn(failure(test.path), { reflector: { promptBudgetTokens: 3_000 } });
    expect(conversationTokens(messages) + schemaTokens).toBeLessThanOrEqual(3_000);
    expect(messages[1]!.content).toContain(`${changed.line} >     lines = ["TOTALS"]`);
  });
});

describe('outputForPrompt', () => {
  it('gives the raw output only when the report does not already hold the failures', () => {
    const parsed = report('FileNotFoundError: x', '/tmp/a');
    expect(outputForPrompt({ testReport: parsed, stderrExcerpt: 'Traceback ...' })).toContain('left out');
    expect(outputForPrompt({ testReport: { ...parsed, parsed: false, cases: [] }, stderrExcerpt: 'ImportError while loading conftest' })).toBe('ImportError while loading conftest');
    expect(outputForPrompt({ testReport: undefined, stderrExcerpt: '' })).toBe('(empty)');
  });
});

describe('failureSignature', () => {
  it('prefers safety findings, then the first failing test, then the phase error, then a missing report', () => {
    const finding = { ruleId: 'python-eval', severity: 4, path: 'a.py', line: 1, column: 1, message: '', snippet: '', remediation: '', cwe: '', confidence: 0, tool: 'ratchet', action: 0, preExisting: false };
    expect(failureSignature(undefined, undefined, [finding, { ...finding, ruleId: 'python-os-system' }, finding])).toBe('safety: python-eval, python-os-system');
    expect(failureSignature(report('E   AssertionError: assert 3 == 4', '/x/y'), undefined, [])).toBe("AssertionError: assert <n> == <n> '<v>'");
    expect(failureSignature(undefined, { code: 'MODEL_REPLY_INVALID', message: 'reply had 3 problems', retryable: false, signature: '', detail: '' }, [])).toBe('MODEL_REPLY_INVALID: reply had <n> problems');
    expect(failureSignature(undefined, undefined, [])).toBe('no test report');
    expect(failureSignature({ ...report('x', 'y'), cases: [], total: 0, passed: 0, failed: 0 }, undefined, [])).toBe('no tests collected');
  });
});
