import { ErrorCode } from '@ratchet/errors';
import { z } from 'zod';
import { ScriptedModel } from './adapters/scripted-model';
import type { ChatRequest } from './domain/chat-model';
import { completeStructured, StructuredReplyError } from './structured';

const planSchema = z.object({ steps: z.array(z.string()).min(1), done: z.boolean() });

const request: ChatRequest = {
  role: 'planner',
  messages: [
    { role: 'system', content: 'You plan.' },
    { role: 'user', content: 'Plan: add a README.' },
  ],
};

const usage = { promptTokens: 10, completionTokens: 4 };

describe('completeStructured', () => {
  it('returns the value after one round and derives response_format from the schema', async () => {
    const model = new ScriptedModel([{ role: 'planner', reply: '{"steps":["write it"],"done":false}', usage }]);

    const result = await completeStructured(model, request, planSchema);

    expect(result).toEqual({ value: { steps: ['write it'], done: false }, usage, rounds: 1 });
    const sent = model.calls[0]!.request;
    expect(sent.responseFormat?.name).toBe('response');
    expect(sent.responseFormat?.schema).toMatchObject({ type: 'object', required: ['steps', 'done'] });
    expect(sent.responseFormat?.schema).not.toHaveProperty('$schema');
  });

  it('extracts JSON from a ```json fence', async () => {
    const model = new ScriptedModel([{ role: 'planner', reply: 'Here is the plan:\n```json\n{"steps":["a","b"],"done":true}\n```\nGood luck.' }]);

    const result = await completeStructured(model, request, planSchema);

    expect(result.value).toEqual({ steps: ['a', 'b'], done: true });
    expect(result.rounds).toBe(1);
  });

  it('repairs a reply that misses the schema in one more round, listing the issues, and sums usage', async () => {
    const model = new ScriptedModel([
      { role: 'planner', reply: '{"steps":[],"done":"no"}', usage },
      { role: 'planner', expect: ['steps', 'done'], reply: '{"steps":["fix"],"done":false}', usage: { promptTokens: 30, completionTokens: 6 } },
    ]);

    const result = await completeStructured(model, request, planSchema);

    expect(result).toEqual({ value: { steps: ['fix'], done: false }, usage: { promptTokens: 40, completionTokens: 10 }, rounds: 2 });
    const repair = model.calls[1]!.request;
    expect(repair.messages).toHaveLength(4);
    expect(repair.messages[2]).toEqual({ role: 'assistant', content: '{"steps":[],"done":"no"}' });
    const issues = repair.messages[3]!.content;
    expect(issues).toContain('steps:');
    expect(issues).toContain('done:');
    expect(issues).toMatch(/expected boolean/);
  });

  it('repairs a reply that is not JSON at all', async () => {
    const model = new ScriptedModel([
      { role: 'planner', reply: 'Sure! I will plan it.' },
      { role: 'planner', expect: 'not valid JSON', reply: '{"steps":["x"],"done":true}' },
    ]);

    const result = await completeStructured(model, request, planSchema);

    expect(result.rounds).toBe(2);
  });

  it('throws INVALID_ARGUMENT when the repaired reply is still wrong', async () => {
    const model = new ScriptedModel([
      { role: 'planner', reply: '{"steps":[]}' },
      { role: 'planner', reply: '{"steps":[], "done": 1}' },
    ]);

    await expect(completeStructured(model, request, planSchema)).rejects.toMatchObject({
      code: ErrorCode.INVALID_ARGUMENT,
      message: expect.stringContaining('did not match the schema') as unknown,
    });
    expect(model.calls).toHaveLength(2);
  });

  it('rejects an oversize reply before parsing, without a repair round', async () => {
    const model = new ScriptedModel([{ role: 'planner', reply: `{"steps":["${'x'.repeat(2000)}"],"done":true}` }]);

    await expect(completeStructured(model, request, planSchema, { maxReplyBytes: 1000 })).rejects.toMatchObject({
      code: ErrorCode.INVALID_ARGUMENT,
      message: expect.stringMatching(/over the 1000-byte cap/) as unknown,
    });
    expect(model.calls).toHaveLength(1);
  });

  it('counts the tokens of rejected replies and their repair round in the error', async () => {
    const model = new ScriptedModel([
      { role: 'planner', reply: '{"steps":[]}', usage },
      { role: 'planner', reply: 'still not it', usage: { promptTokens: 20, completionTokens: 6 } },
    ]);
    const error = await completeStructured(model, request, planSchema).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(StructuredReplyError);
    expect(error).toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, usage: { promptTokens: 30, completionTokens: 10 }, rounds: 2, truncated: false });
    const oversize = await completeStructured(new ScriptedModel([{ role: 'planner', reply: 'x'.repeat(2000), usage }]), request, planSchema, { maxReplyBytes: 1000 }).catch((caught: unknown) => caught);
    expect(oversize).toMatchObject({ usage, rounds: 1 });
  });

  it('asks for a shorter reply when one was cut at the length limit, and says so when it happens twice', async () => {
    const cut = '{"steps":["write the whole';
    const model = new ScriptedModel([
      { role: 'planner', reply: cut, usage, finishReason: 'length' },
      { role: 'planner', reply: '{"steps":["short"],"done":true}', usage },
    ]);
    const result = await completeStructured(model, { ...request, maxTokens: 50 }, planSchema);
    expect(result).toMatchObject({ value: { steps: ['short'] }, rounds: 2, usage: { promptTokens: 20, completionTokens: 8 } });
    const repair = model.calls[1]!.request.messages.at(-1)!.content;
    expect(repair).toContain('cut off at the length limit (50 tokens)');
    expect(repair).toContain('fewer or smaller files');

    const twice = new ScriptedModel([
      { role: 'planner', reply: cut, finishReason: 'length' },
      { role: 'planner', reply: cut, finishReason: 'length' },
    ]);
    await expect(completeStructured(twice, { ...request, maxTokens: 50 }, planSchema)).rejects.toMatchObject({ truncated: true, message: expect.stringContaining('larger maxTokens') as unknown });
  });

  describe('with lookups', () => {
    const tools = [{ name: 'search', description: 'search the files', parameters: { type: 'object', properties: { pattern: { type: 'string' } }, required: ['pattern'] } }];
    const answered: string[] = [];
    const lookups = (maxRounds: number) => ({ tools, maxRounds, run: (call: { name: string; arguments: string }) => Promise.resolve(`${call.name} ${call.arguments}: hit ${answered.push(call.arguments)}`) });

    it('runs the calls of each round, sends their results back, and asks for the reply once the rounds are used up', async () => {
      answered.length = 0;
      const model = new ScriptedModel([
        { role: 'planner', toolCalls: [{ name: 'search', arguments: { pattern: 'def total' } }, { name: 'search', arguments: { pattern: 'test_total' } }], usage },
        { role: 'planner', expect: 'hit 2', toolCalls: [{ name: 'search', arguments: { pattern: 'rounding' } }], usage },
        { role: 'planner', expect: ['hit 3', 'That was the last lookup'], reply: '{"steps":["fix total"],"done":false}', usage },
      ]);

      const result = await completeStructured(model, request, planSchema, { lookups: lookups(2) });

      expect(result).toEqual({ value: { steps: ['fix total'], done: false }, usage: { promptTokens: 30, completionTokens: 12 }, rounds: 3 });
      expect(answered).toEqual(['{"pattern":"def total"}', '{"pattern":"test_total"}', '{"pattern":"rounding"}']);
      const [first, second, last] = model.calls.map((call) => call.request);
      expect(first!.toolChoice).toBe('auto');
      expect(first!.responseFormat?.name).toBe('response');
      // Each tool result answers its call by id, after the assistant message that made the calls.
      expect(second!.messages.slice(2).map((message) => message.role)).toEqual(['assistant', 'tool', 'tool']);
      expect(second!.messages[3]).toMatchObject({ role: 'tool', name: 'search', content: expect.stringContaining('hit 1') as unknown });
      // The last call still declares the tools (the history holds calls of them) but lets the model call none.
      expect(last!.tools).toEqual(tools);
      expect(last!.toolChoice).toBe('none');
    });

    it('takes a reply that calls no tool at once, as a model that needs no lookup sends', async () => {
      answered.length = 0;
      const model = new ScriptedModel([{ role: 'planner', reply: '{"steps":["write it"],"done":true}', usage }]);
      const result = await completeStructured(model, request, planSchema, { lookups: lookups(3) });
      expect(result).toEqual({ value: { steps: ['write it'], done: true }, usage, rounds: 1 });
      expect(answered).toEqual([]);
    });

    it('repairs a bad reply after lookups with the whole conversation, and counts every call of a failure', async () => {
      const model = new ScriptedModel([
        { role: 'planner', toolCalls: [{ name: 'search', arguments: { pattern: 'x' } }], usage },
        { role: 'planner', reply: '{"steps":[]}', usage },
        { role: 'planner', reply: 'no', usage },
      ]);
      const error = await completeStructured(model, request, planSchema, { lookups: lookups(1) }).catch((caught: unknown) => caught);
      expect(error).toMatchObject({ usage: { promptTokens: 30, completionTokens: 12 }, rounds: 3 });
      const repair = model.calls[2]!.request;
      expect(repair.messages.map((message) => message.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user', 'assistant', 'user']);
      expect(repair.toolChoice).toBe('none');
    });

    it('counts the lookup rounds when a later call fails', async () => {
      const model = new ScriptedModel([{ role: 'planner', toolCalls: [{ name: 'search', arguments: { pattern: 'x' } }], usage }]);
      const error = await completeStructured(model, request, planSchema, { lookups: lookups(2) }).catch((caught: unknown) => caught);
      expect(error).toBeInstanceOf(StructuredReplyError);
      expect(error).toMatchObject({ usage, rounds: 1 });
    });
  });
});
