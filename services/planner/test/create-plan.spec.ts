import { afterEach, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { countTokens } from '@ratchet/agent';
import { conversationTokens, loadPrompts } from '@ratchet/prompting';
import { createClient, InProcessTransport } from '@ratchet/bus';
import { Language, PlannerServiceDefinition, type CreatePlanRequest, type Lesson } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { ScriptedModel, type ScriptedTurn } from '@ratchet/llm';
import { hostService, type RunningService } from '@ratchet/runtime';
import { largeWorkspace } from '@ratchet/testing';
import { createPlannerService, planPromptValues, replanSection } from '../src';

const prompts = loadPrompts(path.resolve(__dirname, '../../../config'));
// CreatePlan never calls the reprompter's model.
const unused = { model: new ScriptedModel([]), modelName: 'unused', temperature: 0, maxTokens: 10 };

const validPlan = {
  summary: 'one module',
  steps: [
    { description: 'write the module', paths: ['app.py'] },
    { description: 'test it', paths: ['tests/test_app.py'] },
  ],
  files: [
    { path: 'app.py', purpose: 'the code', isTest: false },
    { path: 'tests/test_app.py', purpose: 'tests', isTest: true },
  ],
  testStrategy: 'pytest on the functions',
  dependencies: [],
  appliedLessonIds: ['lesson-1', 'made-up'],
};

const lesson: Lesson = {
  id: 'lesson-1',
  title: 'Treat a missing JSON file as empty',
  body: 'Return an empty list when the file does not exist.',
  errorSignature: 'FileNotFoundError: ...',
  tags: [],
  language: Language.LANGUAGE_PYTHON,
  evidence: [],
  stats: undefined,
  createdAt: undefined,
  updatedAt: undefined,
  kind: 0,
  status: 0,
  scope: '',
  embedder: '',
  weight: 0,
  standing: [],
};

function request(overrides: Partial<CreatePlanRequest> = {}): CreatePlanRequest {
  return {
    taskId: 'task-1',
    iteration: 1,
    goal: 'a CLI that manages TODO items in JSON',
    language: Language.LANGUAGE_PYTHON,
    workspace: [],
    acceptanceTests: [],
    lessons: [lesson],
    previousPlan: undefined,
    reflection: undefined,
    replanReason: '',
    previousFailure: '',
    maxTokens: 0,
    judgeTestEdits: false,
    ...overrides,
  };
}

describe('planner over the in-process bus', () => {
  let running: RunningService | undefined;
  afterEach(async () => {
    await running?.stop(100);
  });

  function serve(turns: ScriptedTurn[]) {
    const model = new ScriptedModel(turns, { name: 'planner-test' });
    const transport = new InProcessTransport();
    const service = createPlannerService({ roleModel: { model, modelName: 'test-model', temperature: 0, maxTokens: 1000, price: { promptPerMillion: 1, completionPerMillion: 2 } }, reprompterModel: unused, prompts });
    running = hostService({ name: 'planner', version: 'test', definition: PlannerServiceDefinition, implementation: service.implementation }, { transport });
    return { model, client: createClient(transport, PlannerServiceDefinition) };
  }

  it('turns a goal and lessons into a numbered plan, crediting only lessons it was offered, and prices the call', async () => {
    const { model, client } = serve([{ role: 'planner', reply: JSON.stringify(validPlan), usage: { promptTokens: 1000, completionTokens: 500 } }]);
    const response = await client.createPlan(request());
    expect(response.plan?.steps.map((step) => step.number)).toEqual([1, 2]);
    expect(response.plan?.files.map((file) => file.path)).toEqual(['app.py', 'tests/test_app.py']);
    expect(response.plan?.language).toBe(Language.LANGUAGE_PYTHON);
    expect(response.plan?.appliedLessonIds).toEqual(['lesson-1']);
    expect(response.usage).toEqual({ promptTokens: 1000, completionTokens: 500, costUsd: 0.002, modelCalls: 1 });
    const sent = model.calls[0]!.request;
    const user = sent.messages.find((message) => message.role === 'user')!.content;
    expect(user).toContain('a CLI that manages TODO items in JSON');
    expect(user).toContain('[lesson-1] Treat a missing JSON file as empty');
    expect(sent.messages[0]!.content).toContain('python');
    expect(sent.responseFormat?.name).toBe('planner_reply');
    expect(sent.maxTokens).toBe(1000);
  });

  it('declares the third-party packages the plan needs, trimmed, and the schema asks for them', async () => {
    const { model, client } = serve([{ role: 'planner', reply: JSON.stringify({ ...validPlan, dependencies: [{ name: ' flask ', versionSpec: '>=2.2' }, { name: 'PyYAML', versionSpec: '' }] }) }]);
    const response = await client.createPlan(request({ goal: 'a Flask REST API for books' }));
    expect(response.plan?.dependencies).toEqual([
      { name: 'flask', versionSpec: '>=2.2' },
      { name: 'PyYAML', versionSpec: '' },
    ]);
    expect(JSON.stringify(model.calls[0]!.request.responseFormat?.schema)).toContain('"dependencies"');
    expect(model.calls[0]!.request.messages[0]!.content).toContain('dependency policy');
  });

  it('says why on a re-plan and caps the reply at the remaining token budget', async () => {
    const { model, client } = serve([{ role: 'planner', reply: JSON.stringify(validPlan) }]);
    await client.createPlan(request({ replanReason: 'the same failure twice', previousPlan: { ...validPlan, steps: [], files: [], language: 1, dependencies: [], changesTests: false, changesTestsReason: '' }, maxTokens: 300 }));
    const user = model.calls[0]!.request.messages[1]!.content;
    expect(user).toContain('This is a re-plan. Why: the same failure twice');
    expect(model.calls[0]!.request.maxTokens).toBe(300);
  });

  it('shows a re-plan the real failure, and asks for a new approach only when the reflection says the plan was wrong', () => {
    const reflection = { rootCause: 'add subtracts', hypothesis: 'h', fixDirection: 'return a + b', confidence: 0.9, replanRecommended: false, errorSignature: 'AssertionError: assert <n> == <n>', candidateLesson: undefined, relevantLessonIds: [], disputedTests: [] };
    const codeWasWrong = replanSection({ replanReason: 'resumed by the user', previousPlan: undefined, reflection, previousFailure: 'tests/test_calc.py::test_add: assert -1 == 3\nE   assert -1 == 3' });
    expect(codeWasWrong).toContain('Why: resumed by the user');
    expect(codeWasWrong).toContain('What failed in the last attempt:\ntests/test_calc.py::test_add: assert -1 == 3');
    expect(codeWasWrong).toContain('Fix direction: return a + b');
    expect(codeWasWrong).toContain('keep the design');
    expect(codeWasWrong).not.toContain('The previous plan failed');
    expect(codeWasWrong).not.toContain('<n>');
    const planWasWrong = replanSection({ replanReason: 'the reflector recommends a new plan', previousPlan: undefined, reflection: { ...reflection, replanRecommended: true }, previousFailure: '' });
    expect(planWasWrong).toContain('the plan itself is wrong: change the approach');
    expect(planWasWrong).not.toContain('What failed in the last attempt');
  });

  it('lets the planner of a workspace task look at the project before it plans, and reports each lookup', async () => {
    const workspace = [
      { path: 'tabulate/__init__.py', content: `${'# filler\n'.repeat(5)}def _format(val, floatfmt):\n    return format(float(val), floatfmt)\n` },
      { path: 'pyproject.toml', content: '[tool.pytest.ini_options]\ntestpaths = ["test"]\n' },
    ];
    const { model, client } = serve([
      {
        role: 'planner',
        toolCalls: [
          { name: 'search', arguments: { pattern: 'float\\(val\\)' } },
          { name: 'read_file', arguments: { path: 'tabulate/__init__.py', start_line: 6, end_line: 7 } },
        ],
        usage: { promptTokens: 900, completionTokens: 40 },
      },
      { role: 'planner', expect: ['tabulate/__init__.py:7: return format(float(val), floatfmt)', '6| def _format(val, floatfmt):'], reply: JSON.stringify(validPlan), usage: { promptTokens: 1000, completionTokens: 300 } },
    ]);
    const response = await client.createPlan(request({ goal: 'Decimal values lose precision with floatfmt', workspace }));
    expect(response.plan?.summary).toBe('one module');
    expect(response.usage).toMatchObject({ promptTokens: 1900, completionTokens: 340, modelCalls: 2 });
    expect(response.lookups.map((step) => [step.number, step.tool, step.arguments, step.failed])).toEqual([
      [1, 'search', '{"pattern":"float\\\\(val\\\\)"}', false],
      [2, 'read_file', '{"path":"tabulate/__init__.py","start_line":6,"end_line":7}', false],
    ]);
    const first = model.calls[0]!.request;
    expect(first.tools?.map((tool) => tool.name)).toEqual(['read_file', 'search']);
    expect(first.messages[1]!.content).toContain('Before you plan you may look at the project');
    expect(first.messages[1]!.content).toContain('Up to 8 lookups in all');
  });

  it('sends a plan with a path outside the workspace back for one repair round', async () => {
    const bad = { ...validPlan, files: [{ path: '../etc/passwd', purpose: 'x', isTest: false }] };
    const { model, client } = serve([
      { role: 'planner', reply: JSON.stringify(bad), usage: { promptTokens: 10, completionTokens: 5 } },
      { role: 'planner', expect: 'leaves the workspace', reply: JSON.stringify(validPlan), usage: { promptTokens: 20, completionTokens: 5 } },
    ]);
    const response = await client.createPlan(request());
    expect(response.plan?.files[0]?.path).toBe('app.py');
    expect(response.usage?.modelCalls).toBe(2);
    expect(response.usage?.promptTokens).toBe(30);
    expect(model.remaining).toBe(0);
  });

  it('sends a plan that names a file inside .git back for a repair round', async () => {
    const bad = { ...validPlan, files: [{ path: '.git/hooks/pre-commit', purpose: 'x', isTest: false }] };
    const { model, client } = serve([
      { role: 'planner', reply: JSON.stringify(bad), usage: { promptTokens: 10, completionTokens: 5 } },
      { role: 'planner', expect: 'inside version-control metadata', reply: JSON.stringify(validPlan), usage: { promptTokens: 20, completionTokens: 5 } },
    ]);
    const response = await client.createPlan(request());
    expect(response.plan?.files[0]?.path).toBe('app.py');
    expect(model.remaining).toBe(0);
  });

  it('answers with the reply failure and the tokens of both rounds when the reply is still wrong after the repair round', async () => {
    const { client } = serve([
      { role: 'planner', reply: 'not json', usage: { promptTokens: 10, completionTokens: 5 } },
      { role: 'planner', reply: '{"summary": ""}', usage: { promptTokens: 20, completionTokens: 5 } },
    ]);
    const response = await client.createPlan(request());
    expect(response.plan).toBeUndefined();
    expect(response.replyFailure).toMatchObject({ message: expect.stringContaining('planner_reply'), truncated: false });
    expect(response.usage).toMatchObject({ promptTokens: 30, completionTokens: 10, modelCalls: 2 });
  });

  it('judges from the goal whether the acceptance tests may change, and must answer when asked', async () => {
    const tests = [{ path: 'tests/test_app.py', content: 'def test_total():\n    assert total() == 3\n' }];
    const { model, client } = serve([
      { role: 'planner', reply: JSON.stringify(validPlan) },
      { role: 'planner', reply: JSON.stringify({ ...validPlan, changesTests: true, changesTestsReason: '  "update the tests for the new signature"  ' }) },
    ]);
    const response = await client.createPlan(request({ goal: 'total() takes a list now: update the tests for the new signature', acceptanceTests: tests, judgeTestEdits: true }));
    // The first reply lacks the two keys, so it goes back for repair; the second answers.
    expect(model.calls).toHaveLength(2);
    expect(model.calls[0]!.request.messages[1]!.content).toContain('Set changesTests to true only when the goal asks');
    expect(model.calls[0]!.request.responseFormat?.schema).toMatchObject({ required: expect.arrayContaining(['changesTests', 'changesTestsReason']) });
    expect(response.plan).toMatchObject({ changesTests: true, changesTestsReason: '"update the tests for the new signature"' });
  });

  it('tells the planner to keep the tests when the task does not leave it to the goal, and never unlocks them', async () => {
    const tests = [{ path: 'tests/test_app.py', content: 'def test_total():\n    assert total() == 3\n' }];
    const { model, client } = serve([{ role: 'planner', reply: JSON.stringify({ ...validPlan, changesTests: true, changesTestsReason: 'x' }) }, { role: 'planner', reply: JSON.stringify(validPlan) }]);
    const response = await client.createPlan(request({ acceptanceTests: tests, judgeTestEdits: false }));
    // Keys the schema does not ask for are refused by the strict schema; the repaired reply is a plan that keeps the tests.
    expect(model.calls[0]!.request.messages[1]!.content).toContain('Never change these tests.');
    expect(response.plan).toMatchObject({ changesTests: false, changesTestsReason: '' });
  });

  it("plans to the task's spec and project profile when it has them, and shows neither when it does not", async () => {
    const spec = {
      summary: 'A todo CLI.',
      behaviour: 'todo add <text> appends an item.',
      inputs: 'arguments',
      outputs: 'stdout',
      interface: ['todo add <text>', 'todo list'],
      edgeCases: ['an empty list prints nothing'],
      acceptanceCriteria: ['after `todo add milk`, `todo list` prints `1. milk`'],
      assumptions: ['items are kept in todo.json'],
    };
    const profile = { name: 'cli_tool', description: 'a command-line tool', language: Language.LANGUAGE_PYTHON, layout: [], testStyle: 'call main(argv)', dependencies: [{ name: 'click', versionSpec: '>=8' }], prompt: 'Use click.' };
    const { model, client } = serve([
      { role: 'planner', reply: JSON.stringify(validPlan) },
      { role: 'planner', reply: JSON.stringify(validPlan) },
    ]);
    await client.createPlan(request({ spec, profile }));
    const user = model.calls[0]!.request.messages[1]!.content;
    expect(user).toContain('Spec (the goal made precise');
    expect(user).toContain('Interface:\n- todo add <text>\n- todo list');
    expect(user).toContain('Acceptance criteria:\n1. after `todo add milk`, `todo list` prints `1. milk`');
    expect(user).toContain('Assumptions (where the goal left a choice open):\n- items are kept in todo.json');
    expect(user).toContain('Project profile: cli_tool (a command-line tool)');
    expect(user).toContain('Packages the profile uses: click >=8');
    expect(user).toContain('Profile instructions:\nUse click.');
    await client.createPlan(request());
    const plain = model.calls[1]!.request.messages[1]!.content;
    expect(plain).not.toContain('Spec (');
    expect(plain).not.toContain('Project profile');
  });

  it('rejects an empty goal and an unspecified language before calling the model', async () => {
    const { model, client } = serve([]);
    await expect(client.createPlan(request({ goal: '  ' }))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('goal is empty') });
    await expect(client.createPlan(request({ language: Language.LANGUAGE_UNSPECIFIED }))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT });
    expect(model.calls).toHaveLength(0);
  });
});

describe('prompt placeholders', () => {
  it('fails at start when the planner prompt uses a placeholder the service does not fill', () => {
    const model = new ScriptedModel([]);
    expect(() =>
      createPlannerService({ roleModel: { model, modelName: 'm', temperature: 0, maxTokens: 10 }, reprompterModel: unused, prompts: { ...prompts, planner: { system: 'x {{goal}}', user: '{{gaol}}' } } }),
    ).toThrow(/unknown placeholder\(s\) \{\{gaol\}\}/);
  });
});

describe('the files the planner sees', () => {
  const user = (values: Readonly<Record<string, string>>) => `${values['workspace']}\n${values['acceptanceTests']}`;

  it('shows small workspaces whole, and a large one as the relevant files and a map within its budget', () => {
    const small = planPromptValues(request({ workspace: [{ path: 'app.py', content: 'def main():\n    pass\n' }] }), prompts.planner, { budgetTokens: 12_000 });
    expect(small['workspace']).toBe('--- app.py\n```\ndef main():\n    pass\n\n```');
    const large = Array.from({ length: 2_000 }, (_, index) => ({ path: `pkg/module_${index}.py`, content: `def helper_${index}(value):\n    return value * ${index}\n`.repeat(5) }));
    large.push({ path: 'pkg/billing.py', content: 'def compute_invoice_total(lines):\n    return sum(line.amount for line in lines)\n' });
    const values = planPromptValues(request({ goal: 'compute_invoice_total ignores discounts', workspace: large }), prompts.planner, { budgetTokens: 4_000 });
    const shown = values['workspace'] ?? '';
    expect(shown).toMatch(/^\(2001 files: 1 shown whole, 0 as excerpts around the lines that matter, the others only in the map below\)/);
    expect(shown).toContain('--- pkg/billing.py\n```\ndef compute_invoice_total(lines):');
    expect(shown).toContain('Map of the other files (their definitions, most relevant first):');
    expect(shown).toMatch(/\.\.\. and \d+ more files/);
    expect(countTokens(user(values))).toBeLessThan(4_000);
  });

  it('keeps every call of a workspace of many large files under planner.promptBudgetTokens (16,000), lookups included, with the definition the goal names', async () => {
    // 400 files of about 5,000 tokens each: 2,000,000 tokens of code, 80 of them tests.
    const workspace = largeWorkspace(400);
    const tests = workspace.filter((file) => file.path.startsWith('tests/'));
    const big = workspace.filter((file) => !file.path.startsWith('tests/')).slice(0, 8);
    // A model that reads whole large files in every round it may: the results are cut to the lookups' share.
    const reads = (from: number) => big.slice(from, from + 3).map((file) => ({ name: 'read_file', arguments: { path: file.path } }));
    const model = new ScriptedModel([
      { role: 'planner', toolCalls: reads(0) },
      { role: 'planner', toolCalls: reads(3) },
      { role: 'planner', toolCalls: [{ name: 'search', arguments: { pattern: 'def report_' } }] },
      { role: 'planner', reply: JSON.stringify(validPlan) },
    ]);
    const transport = new InProcessTransport();
    const service = createPlannerService({ roleModel: { model, modelName: 'm', temperature: 0, maxTokens: 1000 }, reprompterModel: unused, prompts });
    const running = hostService({ name: 'planner', version: 'test', definition: PlannerServiceDefinition, implementation: service.implementation }, { transport });
    try {
      const response = await createClient(transport, PlannerServiceDefinition, { defaultTimeoutMs: 60_000 }).createPlan(request({ goal: 'report_123_45 must print a TOTALS line first', workspace, acceptanceTests: tests }));
      expect(response.plan?.summary).toBe('one module');
      expect(response.lookups.map((step) => step.tool)).toEqual(['read_file', 'read_file', 'read_file', 'read_file', 'read_file', 'read_file', 'search']);
      expect(response.lookups.at(-1)!.result).toMatch(/^not run: the lookups have used their share/);
      expect(model.calls).toHaveLength(4);
      for (const { request: sent } of model.calls) {
        // The reply schema and the tools travel with every call: they are inside the budget too.
        const beside = countTokens(JSON.stringify(sent.responseFormat?.schema)) + countTokens(JSON.stringify(sent.tools ?? []));
        expect(conversationTokens(sent.messages) + beside).toBeLessThanOrEqual(16_000);
      }
      const prompt = model.calls[0]!.request.messages[1]!.content;
      expect(prompt).toMatch(/--- app\/pkg_6\/area_3\/records_123\.py \(excerpt: \d+ of 538 lines\)/);
      expect(prompt).toContain('406 | def report_123_45(rows, width=45):\n407 |     """Report 45 of report_123."""');
      expect(prompt).toContain('Map of the other files');
      expect(prompt).toContain('(400 files: ');
      expect(prompt).toContain('(80 files');
    } finally {
      await running.stop(100);
    }
  });

  it('offers no lookups to a greenfield task, to a model on the text tool protocol, or with planner.lookupCalls 0', async () => {
    const workspace = [{ path: 'app.py', content: 'def main():\n    pass\n' }];
    const cases: { workspace: typeof workspace; toolProtocol?: 'text'; lookupCalls?: number }[] = [{ workspace: [] }, { workspace, toolProtocol: 'text' }, { workspace, lookupCalls: 0 }];
    for (const { workspace: files, toolProtocol, lookupCalls } of cases) {
      const model = new ScriptedModel([{ role: 'planner', reply: JSON.stringify(validPlan) }]);
      const transport = new InProcessTransport();
      const service = createPlannerService({
        roleModel: { model, modelName: 'm', temperature: 0, maxTokens: 1000, ...(toolProtocol === undefined ? {} : { toolProtocol }) },
        reprompterModel: unused,
        prompts,
        settings: { planner: { promptBudgetTokens: 16_000, lookupCalls: lookupCalls ?? 8, lookupTokens: 4_000 } },
      });
      const running = hostService({ name: 'planner', version: 'test', definition: PlannerServiceDefinition, implementation: service.implementation }, { transport });
      try {
        const response = await createClient(transport, PlannerServiceDefinition).createPlan(request({ workspace: files }));
        expect(response.lookups).toEqual([]);
        expect(model.calls[0]!.request.tools).toBeUndefined();
        expect(model.calls[0]!.request.messages[1]!.content).not.toContain('look at the project');
      } finally {
        await running.stop(100);
      }
    }
  });
});
