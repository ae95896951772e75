import { afterEach, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { countTokens } from '@ratchet/agent';
import { conversationTokens, loadPrompts } from '@ratchet/prompting';
import { createClient, InProcessTransport } from '@ratchet/bus';
import { Language, PlannerServiceDefinition, type ClarifyingQuestion, type ProjectProfile, type RepromptRequest } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { ScriptedModel, type ScriptedTurn } from '@ratchet/llm';
import { hostService, type RunningService } from '@ratchet/runtime';
import { largeWorkspace, questionsReply, specReply } from '@ratchet/testing';
import { createPlannerService, nextQuestionIds, reprompterGoalTokens, toSpec } from '../src';

const prompts = loadPrompts(path.resolve(__dirname, '../../../config'));
const askedAt = new Date('2025-01-02T03:04:05Z');

function request(overrides: Partial<RepromptRequest> = {}): RepromptRequest {
  return {
    taskId: 'task-1',
    goal: 'make a todo app',
    language: Language.LANGUAGE_PYTHON,
    profile: undefined,
    workspace: [],
    acceptanceTests: [],
    answered: [],
    maxQuestions: 3,
    maxTokens: 0,
    ...overrides,
  };
}

function answered(questionId: string, question: string, assumption: string, answer: string): ClarifyingQuestion {
  return { questionId, question, why: 'it changes the result', options: [], assumption, answer, answeredBy: answer === '' ? 'assumption' : 'alice', askedAt, answeredAt: askedAt };
}

const userMessage = (model: ScriptedModel, call = 0) => model.calls[call]!.request.messages.find((message) => message.role === 'user')!.content;
const systemMessage = (model: ScriptedModel, call = 0) => model.calls[call]!.request.messages[0]!.content;

describe('reprompter over the in-process bus', () => {
  const running: RunningService[] = [];
  afterEach(async () => {
    await Promise.all(running.splice(0).map((service) => service.stop(100)));
  });

  function serve(turns: ScriptedTurn[]) {
    const model = new ScriptedModel(turns, { name: 'reprompter-test' });
    const planner = new ScriptedModel([], { name: 'planner-test' });
    const transport = new InProcessTransport();
    const service = createPlannerService({
      roleModel: { model: planner, modelName: 'planner-model', temperature: 0, maxTokens: 1000 },
      reprompterModel: { model, modelName: 'reprompter-model', temperature: 0, maxTokens: 2000, price: { promptPerMillion: 1, completionPerMillion: 2 } },
      prompts,
      now: () => askedAt,
    });
    running.push(hostService({ name: 'planner', version: 'test', definition: PlannerServiceDefinition, implementation: service.implementation }, { transport }));
    return { model, planner, client: createClient(transport, PlannerServiceDefinition, { defaultTimeoutMs: 60_000 }) };
  }

  it('asks clarifying questions about a vague goal on its own model, numbered q1.. with why, options and assumption', async () => {
    const { model, planner, client } = serve([
      {
        role: 'reprompter',
        expect: 'Goal: make a todo app',
        reply: questionsReply([
          { question: 'Should it be a command-line tool or a web app?', why: 'the interface is entirely different', options: ['CLI', 'web app'], assumption: 'a command-line tool' },
          { question: 'Where are the items stored?', assumption: 'a JSON file in the working directory' },
        ]),
        usage: { promptTokens: 1000, completionTokens: 100 },
      },
    ]);
    const response = await client.reprompt(request());
    expect(response.spec).toBeUndefined();
    expect(response.replyFailure).toBeUndefined();
    expect(response.questions).toEqual([
      { questionId: 'q1', question: 'Should it be a command-line tool or a web app?', why: 'the interface is entirely different', options: ['CLI', 'web app'], assumption: 'a command-line tool', answer: '', answeredBy: '', askedAt, answeredAt: undefined },
      expect.objectContaining({ questionId: 'q2', question: 'Where are the items stored?', assumption: 'a JSON file in the working directory', answer: '' }),
    ]);
    expect(response.usage).toEqual({ promptTokens: 1000, completionTokens: 100, costUsd: 0.0012, modelCalls: 1 });
    expect(planner.calls).toHaveLength(0);
    const sent = model.calls[0]!.request;
    expect(sent.role).toBe('reprompter');
    expect(sent.responseFormat?.name).toBe('reprompter_reply');
    expect(sent.maxTokens).toBe(2000);
    expect(systemMessage(model)).toContain('You may ask at most 3 questions now');
    expect(userMessage(model)).toContain('Questions asked so far, with their answers:\n(none)');
  });

  it('writes the spec from the answers, and lists the assumption of a question answered "use your assumption"', async () => {
    const spec = {
      summary: 'A command-line todo list kept in todo.json.',
      behaviour: 'todo add <text> appends an item; todo list prints them numbered; todo done <n> removes item n.',
      inputs: 'command-line arguments',
      outputs: 'lines on stdout; exit code 1 with a message on stderr for a bad item number',
      interface: ['todo add <text>', 'todo list', 'todo done <n>'],
      edgeCases: ['todo list with no items prints nothing', 'todo done with a number out of range exits 1'],
      acceptanceCriteria: ['after `todo add milk`, `todo list` prints `1. milk`', '`todo done 5` with two items exits 1'],
      assumptions: ['the file is created on first use'],
    };
    const { model, client } = serve([{ role: 'reprompter', reply: specReply(spec) }]);
    const response = await client.reprompt(
      request({
        answered: [answered('q1', 'Should it be a command-line tool or a web app?', 'a command-line tool', 'CLI'), answered('q2', 'Where are the items stored?', 'a JSON file named todo.json', '')],
        maxQuestions: 1,
      }),
    );
    expect(response.questions).toEqual([]);
    expect(response.spec).toEqual({ ...spec, assumptions: ['the file is created on first use', 'a JSON file named todo.json'] });
    const user = userMessage(model);
    expect(user).toContain('q1. Should it be a command-line tool or a web app?\n   Answer: CLI');
    expect(user).toContain('q2. Where are the items stored?\n   No answer: use your assumption (a JSON file named todo.json) and copy it word for word under assumptions.');
    expect(systemMessage(model)).toContain('You may ask at most 1 question now');
  });

  it('does not state an assumption twice when the model copied it into a longer line', () => {
    const reply = { summary: 's', behaviour: 'b', inputs: '', outputs: '', interface: ['todo list'], edgeCases: [], acceptanceCriteria: ['c'], assumptions: ['q2: A JSON file named todo.json (no answer given).'] };
    const asked = [
      { questionId: 'q2', question: 'Where are the items stored?', assumption: 'a JSON file named  todo.json', answer: '' },
      { questionId: 'q3', question: 'Sorted?', assumption: 'Items are listed in the order they were added.', answer: '' },
    ];
    expect(toSpec(reply, asked).assumptions).toEqual(['q2: A JSON file named todo.json (no answer given).', 'Items are listed in the order they were added.']);
  });

  it('numbers new questions on from the answered ones', async () => {
    const { client } = serve([{ role: 'reprompter', reply: questionsReply(['How should an empty list be shown?']) }]);
    const response = await client.reprompt(request({ answered: [answered('q1', 'CLI or web?', 'CLI', 'CLI'), answered('q2', 'Storage?', 'JSON', '')], maxQuestions: 1 }));
    expect(response.questions.map((question) => question.questionId)).toEqual(['q3']);
    expect(nextQuestionIds([{ questionId: 'q7' }, { questionId: 'custom' }], 2)).toEqual(['q8', 'q9']);
    expect(nextQuestionIds([{ questionId: 'x' }, { questionId: 'q3' }, { questionId: 'q4' }], 1)).toEqual(['q5']);
  });

  it('with max_questions 0 must write a spec with its assumptions: a reply with questions goes back for repair', async () => {
    const { model, client } = serve([
      { role: 'reprompter', reply: questionsReply(['CLI or web?']), usage: { promptTokens: 100, completionTokens: 10 } },
      {
        role: 'reprompter',
        expect: 'no more questions may be asked',
        reply: specReply({ assumptions: ['a command-line tool', 'items are kept in todo.json'] }),
        usage: { promptTokens: 200, completionTokens: 50 },
      },
    ]);
    const response = await client.reprompt(request({ maxQuestions: 0 }));
    expect(response.questions).toEqual([]);
    expect(response.spec?.assumptions).toEqual(['a command-line tool', 'items are kept in todo.json']);
    expect(response.spec?.acceptanceCriteria.length).toBeGreaterThan(0);
    expect(response.usage).toMatchObject({ promptTokens: 300, completionTokens: 60, modelCalls: 2 });
    expect(systemMessage(model)).toContain('Do not ask questions now: write the spec');
    // The schema sent with the request already says so: no questions, and a spec object (not null).
    expect(model.calls[0]!.request.responseFormat?.schema).toMatchObject({ properties: { questions: { maxItems: 0 }, spec: { type: 'object' } } });
  });

  it('sends back a reply with too many questions, both questions and a spec, or a question asked before', async () => {
    const { model, client } = serve([
      { role: 'reprompter', reply: questionsReply(['one?', 'two?', 'three?']) },
      { role: 'reprompter', expect: 'ask at most 2 question(s)', reply: questionsReply(['one?', 'two?']) },
    ]);
    const tooMany = await client.reprompt(request({ maxQuestions: 2 }));
    expect(tooMany.questions.map((question) => question.questionId)).toEqual(['q1', 'q2']);
    expect(model.remaining).toBe(0);

    const both = JSON.stringify({ ...JSON.parse(specReply()), questions: JSON.parse(questionsReply(['CLI?'])).questions });
    const second = serve([
      { role: 'reprompter', reply: both },
      { role: 'reprompter', expect: 'either questions (and spec null) or a spec (and questions empty), not both', reply: specReply() },
    ]);
    expect((await second.client.reprompt(request())).spec?.summary).toBe('A function that adds two numbers.');

    const third = serve([
      { role: 'reprompter', reply: questionsReply(['Should it be a CLI or a web app']) },
      { role: 'reprompter', expect: 'was asked before; use its answer', reply: specReply() },
    ]);
    const again = await third.client.reprompt(request({ answered: [answered('q1', 'Should it be a CLI or a web app?', 'CLI', 'CLI')] }));
    expect(again.spec).toBeDefined();
    expect(third.model.remaining).toBe(0);
  });

  it('answers with the reply failure and the tokens of both rounds when the reply stays invalid', async () => {
    const { client } = serve([
      { role: 'reprompter', reply: 'I think you want a todo app.', usage: { promptTokens: 10, completionTokens: 5 } },
      { role: 'reprompter', reply: '{"questions": [], "spec": null}', usage: { promptTokens: 20, completionTokens: 5 } },
    ]);
    const response = await client.reprompt(request());
    expect(response.spec).toBeUndefined();
    expect(response.questions).toEqual([]);
    expect(response.replyFailure).toMatchObject({ message: expect.stringContaining('reprompter_reply'), truncated: false });
    expect(response.replyFailure?.message).toContain('neither questions nor a spec');
    expect(response.usage).toMatchObject({ promptTokens: 30, completionTokens: 10, modelCalls: 2 });
  });

  it('refuses an empty goal, saying what to do, and an unspecified language, before calling the model', async () => {
    const { model, client } = serve([]);
    await expect(client.reprompt(request({ goal: ' \n\t ' }))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('goal is empty; describe what the program should do') });
    await expect(client.reprompt(request({ language: Language.LANGUAGE_UNSPECIFIED }))).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('language') });
    expect(model.calls).toHaveLength(0);
  });

  it('cuts a 100 KB goal in the prompt with a note, and still answers', async () => {
    const goal = `Build an inventory tracker. ${'Each item has a name, a quantity and a location; '.repeat(2_100)}THE-VERY-END`;
    expect(Buffer.byteLength(goal)).toBeGreaterThan(100_000);
    const { model, client } = serve([{ role: 'reprompter', reply: specReply({ summary: 'An inventory tracker.' }) }]);
    const response = await client.reprompt(request({ goal }));
    expect(response.spec?.summary).toBe('An inventory tracker.');
    const user = userMessage(model);
    expect(user).toContain('Goal: Build an inventory tracker.');
    expect(user).not.toContain('THE-VERY-END');
    // The goal takes most of the reprompter's budget (6,000 by default), never more than reprompterGoalTokens.
    const shown = Number(/its first (\d+) of \d+ tokens are shown above/.exec(user)?.[1]);
    expect(shown).toBeGreaterThan(3_000);
    expect(shown).toBeLessThanOrEqual(reprompterGoalTokens);
    expect(conversationTokens(model.calls[0]!.request.messages)).toBeLessThanOrEqual(6_000);
    expect(countTokens(user)).toBeLessThan(reprompterGoalTokens);
  });

  it('keeps a workspace of many large files under reprompter.promptBudgetTokens (6,000), with the definition the goal names', async () => {
    const { model, client } = serve([{ role: 'reprompter', reply: specReply() }]);
    // 300 files of about 5,000 tokens each.
    const workspace = largeWorkspace(300);
    await client.reprompt(request({ goal: 'report_123_45 should print a TOTALS line first', workspace, acceptanceTests: workspace.filter((file) => file.path.startsWith('tests/')) }));
    expect(conversationTokens(model.calls[0]!.request.messages)).toBeLessThanOrEqual(6_000);
    const user = userMessage(model);
    expect(user).toContain('Goal: report_123_45 should print a TOTALS line first');
    expect(user).toContain('406 | def report_123_45(rows, width=45):');
    expect(user).toContain('Map of the other files');
  });

  it('shows the project profile, the workspace and the acceptance tests', async () => {
    const profile: ProjectProfile = {
      name: 'cli_tool',
      description: 'a command-line tool',
      language: Language.LANGUAGE_PYTHON,
      layout: [{ path: 'cli.py', purpose: 'argparse entry point', content: 'import argparse\n' }],
      testStyle: 'run main(argv) and check stdout with capsys',
      dependencies: [],
      prompt: 'Exit with code 2 on usage errors.',
    };
    const { model, client } = serve([{ role: 'reprompter', reply: specReply() }]);
    await client.reprompt(
      request({ profile, workspace: [{ path: 'todo.py', content: 'def main():\n    pass\n' }], acceptanceTests: [{ path: 'tests/test_todo.py', content: 'def test_add():\n    assert True\n' }] }),
    );
    const user = userMessage(model);
    expect(user).toContain('Project profile: cli_tool (a command-line tool)');
    expect(user).toContain('- cli.py: argparse entry point (starting content given)');
    expect(user).toContain('Test style: run main(argv) and check stdout with capsys');
    expect(user).toContain('Exit with code 2 on usage errors.');
    expect(user).toContain('--- todo.py');
    expect(user).toContain('def test_add():');
  });
});

describe('reprompter prompt placeholders', () => {
  it('fails at start when the reprompter prompt uses a placeholder the service does not fill', () => {
    const model = { model: new ScriptedModel([]), modelName: 'm', temperature: 0, maxTokens: 10 };
    expect(() => createPlannerService({ roleModel: model, reprompterModel: model, prompts: { ...prompts, reprompter: { system: '{{goal}}', user: '{{answers}}' } } })).toThrow(
      /prompts.yaml reprompter: unknown placeholder\(s\) \{\{answers\}\}/,
    );
  });
});
