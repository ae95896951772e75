import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ErrorCode } from '@ratchet/errors';
import type { ChatRequest, ToolDefinition } from '../domain/chat-model';
import { ScriptedModel } from './scripted-model';
import { rejectionOf } from '@ratchet/testing';

function ask(role: ChatRequest['role'], text: string): ChatRequest {
  return { role, messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: text }] };
}

describe('ScriptedModel', () => {
  let directory: string;

  beforeAll(async () => {
    directory = await mkdtemp(join(tmpdir(), 'ratchet-llm-'));
  });

  afterAll(async () => {
    await rm(directory, { recursive: true, force: true });
  });

  it('replays turns in order and records the calls', async () => {
    const model = new ScriptedModel([
      { role: 'planner', expect: 'README', reply: 'plan', usage: { promptTokens: 5, completionTokens: 1 } },
      { role: 'coder', expect: ['step 1', 'README'], reply: 'code' },
    ]);

    const first = await model.complete(ask('planner', 'add a README'));
    const second = await model.complete(ask('coder', 'do step 1 of README'));

    expect(first).toEqual({ content: 'plan', usage: { promptTokens: 5, completionTokens: 1 }, model: 'scripted:inline', finishReason: 'stop', toolCalls: [] });
    expect(second.content).toBe('code');
    expect(second.usage).toEqual({ promptTokens: 0, completionTokens: 0 });
    expect(model.calls.map((call) => [call.turn, call.request.role])).toEqual([
      [1, 'planner'],
      [2, 'coder'],
    ]);
    expect(model.remaining).toBe(0);
    expect(() => model.assertFinished()).not.toThrow();
  });

  it('fails with the turn number when the role differs', async () => {
    const model = new ScriptedModel([{ role: 'planner', reply: 'plan' }, { role: 'coder', reply: 'code' }]);
    await model.complete(ask('planner', 'x'));

    const error = await rejectionOf(model.complete(ask('tester', 'run tests')));

    expect(error.code).toBe(ErrorCode.FAILED_PRECONDITION);
    expect(error.message).toContain('turn 2');
    expect(error.message).toContain('expected a coder request, got a tester request');
  });

  it('fails with the turn number when an expected substring is missing from the last user message', async () => {
    const model = new ScriptedModel([{ role: 'planner', expect: 'README', reply: 'plan' }]);

    const error = await rejectionOf(model.complete(ask('planner', 'add a LICENSE')));

    expect(error.code).toBe(ErrorCode.FAILED_PRECONDITION);
    expect(error.message).toContain('turn 1');
    expect(error.message).toContain('"README"');
    expect(error.message).toContain('"add a LICENSE"');
    expect(model.calls).toHaveLength(0);
  });

  it('fails when the script runs out, and reports unplayed turns', async () => {
    const model = new ScriptedModel([{ role: 'planner', reply: 'plan' }, { role: 'coder', reply: 'code' }]);
    expect(() => model.assertFinished()).toThrow(/2 turn\(s\) not replayed, starting with turn 1/);
    await model.complete(ask('planner', 'x'));
    await model.complete(ask('coder', 'y'));

    const error = await rejectionOf(model.complete(ask('planner', 'again')));

    expect(error.code).toBe(ErrorCode.FAILED_PRECONDITION);
    expect(error.message).toContain('ran out: turn 3');
  });

  it('answers concurrent conversations from one script by their expected words (order: by-expect)', async () => {
    const path = join(directory, 'two-tasks.yaml');
    await writeFile(
      path,
      [
        'order: by-expect',
        'turns:',
        '  - { role: planner, expect: "task A", reply: plan-a }',
        '  - { role: planner, expect: "task B", reply: plan-b }',
        '  - { role: coder, expect: "task A", reply: code-a }',
        '  - { role: coder, expect: "task B", reply: code-b }',
      ].join('\n'),
    );
    const model = await ScriptedModel.fromFile(path);
    expect(model.order).toBe('by-expect');
    // Task B runs ahead of task A: each request still gets its own turn.
    expect((await model.complete(ask('planner', 'goal: task B'))).content).toBe('plan-b');
    expect((await model.complete(ask('coder', 'code task B'))).content).toBe('code-b');
    expect((await model.complete(ask('planner', 'goal: task A'))).content).toBe('plan-a');
    const reused = await rejectionOf(model.complete(ask('planner', 'goal: task A')));
    expect(reused.code).toBe(ErrorCode.FAILED_PRECONDITION);
    expect(reused.message).toMatch(/no unused planner turn expects this request \(0 planner turn\(s\) left\)/);
    expect(model.remaining).toBe(1);

    // A role service keeps only its own turns of the shared script.
    const coderOnly = await ScriptedModel.fromFile(path, { roles: ['coder'] });
    expect(coderOnly.remaining).toBe(2);
    expect((await coderOnly.complete(ask('coder', 'code task A'))).content).toBe('code-a');
  });

  it('lets a by-expect turn answer a repeated request up to its times', async () => {
    const model = new ScriptedModel(
      [
        { role: 'coder', expect: 'task A', reply: 'code-a', times: 2 },
        { role: 'coder', expect: 'task B', reply: 'code-b' },
      ],
      { order: 'by-expect' },
    );
    // The same phase asked twice (as after an orchestrator crash) gets the same answer.
    expect((await model.complete(ask('coder', 'code task A'))).content).toBe('code-a');
    expect((await model.complete(ask('coder', 'code task A'))).content).toBe('code-a');
    const third = await rejectionOf(model.complete(ask('coder', 'code task A')));
    expect(third.message).toMatch(/no unused coder turn expects this request \(1 coder turn\(s\) left\)/);
    expect(model.remaining).toBe(1);
  });

  it('refuses an unknown script order', async () => {
    const path = join(directory, 'bad-order.yaml');
    await writeFile(path, ['order: random', 'turns:', '  - { role: planner, reply: p }'].join('\n'));
    const error = await rejectionOf(ScriptedModel.fromFile(path));
    expect(error.code).toBe(ErrorCode.CONFIG_INVALID);
    expect(error.message).toMatch(/order is "random"; use strict or by-expect/);
  });

  it('loads a YAML script and names the model after the file', async () => {
    const path = join(directory, 'readme-task.yaml');
    await writeFile(
      path,
      ['turns:', '  - role: planner', '    expect: README', '    reply: |', '      {"steps": ["write"]}', '    usage: { promptTokens: 3, completionTokens: 2 }', '  - role: reflector', '    reply: lesson'].join('\n'),
    );

    const model = await ScriptedModel.fromFile(path);
    const response = await model.complete(ask('planner', 'add a README'));

    expect(response).toEqual({
      content: '{"steps": ["write"]}\n',
      usage: { promptTokens: 3, completionTokens: 2 },
      model: 'scripted:readme-task.yaml',
      finishReason: 'stop',
      toolCalls: [],
    });
    expect(model.remaining).toBe(1);
  });

  it('loads a JSON list of turns', async () => {
    const path = join(directory, 'turns.json');
    await writeFile(path, JSON.stringify([{ role: 'tester', reply: 'ok' }]));

    const model = await ScriptedModel.fromFile(path);

    expect((await model.complete(ask('tester', 'x'))).model).toBe('scripted:turns.json');
  });

  it('reports a malformed script with the file name and every bad key', async () => {
    const path = join(directory, 'bad.yaml');
    await writeFile(path, ['- role: architect', '  reply: x', '- role: coder', '  replies: y'].join('\n'));

    const error = await rejectionOf(ScriptedModel.fromFile(path));

    expect(error.code).toBe(ErrorCode.CONFIG_INVALID);
    expect(error.message).toContain('bad.yaml');
    expect(error.message).toContain('0.role');
    expect(error.message).toContain('1.reply');
    expect(error.message).toContain('a turn needs a reply, toolCalls, or both');
  });

  describe('tool calls', () => {
    const tool = (name: string): ToolDefinition => ({ name, description: name, parameters: { type: 'object' } });
    const tools = [tool('read_file'), tool('run'), tool('finish')];
    const coderAsk = (text: string, extra: ChatRequest['messages'] = []): ChatRequest => ({
      role: 'coder',
      tools,
      messages: [{ role: 'system', content: 'sys' }, { role: 'user', content: text }, ...extra],
    });

    it('returns a turn\'s tool calls with JSON-stringified arguments, ids and finishReason tool_calls', async () => {
      const model = new ScriptedModel([
        { role: 'coder', toolCalls: [{ name: 'read_file', arguments: { path: 'a.py', start_line: 1 } }, { name: 'run', arguments: '{"command": "pytest', id: 'mine' }] },
        { role: 'coder', reply: 'All green.', toolCalls: [{ name: 'finish' }] },
      ]);

      const first = await model.complete(coderAsk('fix it'));
      const second = await model.complete(coderAsk('fix it'));

      expect(first).toEqual({
        content: '',
        usage: { promptTokens: 0, completionTokens: 0 },
        model: 'scripted:inline',
        finishReason: 'tool_calls',
        toolCalls: [
          { id: 'scripted-1-1', name: 'read_file', arguments: '{"path":"a.py","start_line":1}' },
          // A string is sent as written, so a script can replay malformed JSON.
          { id: 'mine', name: 'run', arguments: '{"command": "pytest' },
        ],
      });
      expect(second).toMatchObject({ content: 'All green.', finishReason: 'tool_calls', toolCalls: [{ id: 'scripted-2-1', name: 'finish', arguments: '{}' }] });
    });

    it('matches expect against the tool results since the last assistant message', async () => {
      const model = new ScriptedModel([
        { role: 'coder', expect: 'fix the parser', toolCalls: [{ name: 'run', arguments: { command: 'pytest -q' } }] },
        { role: 'coder', expect: ['fix the parser', '1 failed'], toolCalls: [{ name: 'read_file', arguments: { path: 'parser.py' } }] },
        { role: 'coder', expect: 'def parse', toolCalls: [{ name: 'finish' }] },
      ]);
      const firstCall = { id: 'scripted-1-1', name: 'run', arguments: '{"command":"pytest -q"}' };
      const secondCall = { id: 'scripted-2-1', name: 'read_file', arguments: '{"path":"parser.py"}' };
      const afterRun: ChatRequest['messages'] = [
        { role: 'assistant', content: '', toolCalls: [firstCall] },
        { role: 'tool', toolCallId: firstCall.id, name: 'run', content: '1 failed, 3 passed' },
      ];

      await model.complete(coderAsk('fix the parser'));
      await model.complete(coderAsk('fix the parser', afterRun));
      // An older tool result no longer counts once the model has answered it.
      const stale = await rejectionOf(
        model.complete(coderAsk('fix the parser', [...afterRun, { role: 'assistant', content: '', toolCalls: [secondCall] }, { role: 'tool', toolCallId: secondCall.id, name: 'read_file', content: '1: import re' }])),
      );
      expect(stale.code).toBe(ErrorCode.FAILED_PRECONDITION);
      expect(stale.message).toContain('expected the last user message or the latest tool results to contain "def parse"');
      expect(stale.message).toContain('1: import re');
      expect(stale.message).not.toContain('1 failed');

      const done = await model.complete(
        coderAsk('fix the parser', [...afterRun, { role: 'assistant', content: '', toolCalls: [secondCall] }, { role: 'tool', toolCallId: secondCall.id, name: 'read_file', content: '1: def parse(text):' }]),
      );
      expect(done.toolCalls[0]!.name).toBe('finish');
      expect(model.remaining).toBe(0);
    });

    it('finds by-expect turns by their tool results too', async () => {
      const model = new ScriptedModel(
        [
          { role: 'coder', expect: ['task A', '2 failed'], reply: 'a-failed' },
          { role: 'coder', expect: ['task A', 'passed'], reply: 'a-passed' },
        ],
        { order: 'by-expect' },
      );
      const result = (content: string): ChatRequest['messages'] => [
        { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'run', arguments: '{}' }] },
        { role: 'tool', toolCallId: 'c1', name: 'run', content },
      ];
      expect((await model.complete(coderAsk('task A', result('4 passed')))).content).toBe('a-passed');
      expect((await model.complete(coderAsk('task A', result('2 failed')))).content).toBe('a-failed');
    });

    it('replays a call of a tool the request did not offer, as real models invent names, but fails loudly when no tools were offered', async () => {
      const model = new ScriptedModel([{ role: 'coder', toolCalls: [{ name: 'delete_repo' }] }]);

      const none = await rejectionOf(model.complete(ask('coder', 'x')));
      expect(none.code).toBe(ErrorCode.FAILED_PRECONDITION);
      expect(none.message).toContain('calls delete_repo, but the request offered no tools');
      expect(model.remaining).toBe(1);

      const invented = await model.complete(coderAsk('x'));
      expect(invented.toolCalls.map((call) => call.name)).toEqual(['delete_repo']);
      expect(model.remaining).toBe(0);
    });

    it('loads tool-call turns from YAML and rejects a turn with neither reply nor toolCalls', async () => {
      const path = join(directory, 'tools.yaml');
      await writeFile(
        path,
        [
          'turns:',
          '  - role: coder',
          '    expect: "add a flag"',
          '    toolCalls:',
          '      - { name: read_file, arguments: { path: cli.py } }',
          '  - role: coder',
          '    reply: "Done: the flag is in."',
          '    toolCalls: [{ name: finish }]',
        ].join('\n'),
      );
      const model = await ScriptedModel.fromFile(path);
      expect((await model.complete(coderAsk('add a flag'))).toolCalls).toEqual([{ id: 'scripted-1-1', name: 'read_file', arguments: '{"path":"cli.py"}' }]);

      const badPath = join(directory, 'empty-turn.yaml');
      await writeFile(badPath, ['- role: coder', '  expect: x', '- role: coder', '  toolCalls: []', '- role: coder', '  toolCalls: [{ arguments: {} }]'].join('\n'));
      const error = await rejectionOf(ScriptedModel.fromFile(badPath));
      expect(error.code).toBe(ErrorCode.CONFIG_INVALID);
      expect(error.message).toContain('0.reply: a turn needs a reply, toolCalls, or both');
      expect(error.message).toContain('1.toolCalls');
      expect(error.message).toContain('2.toolCalls.0.name');
    });
  });

  it('reports unparsable YAML and missing files clearly', async () => {
    const path = join(directory, 'broken.yaml');
    await writeFile(path, 'turns: [ { role: planner, reply: "unterminated ');

    const broken = await rejectionOf(ScriptedModel.fromFile(path));
    expect(broken.code).toBe(ErrorCode.CONFIG_INVALID);
    expect(broken.message).toContain('broken.yaml is not valid YAML');

    const missing = await rejectionOf(ScriptedModel.fromFile(join(directory, 'nope.yaml')));
    expect(missing.code).toBe(ErrorCode.NOT_FOUND);
    expect(missing.message).toContain('nope.yaml');
  });
});
