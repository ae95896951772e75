import { describe, expect, it } from '@jest/globals';
import { AppError, ErrorCode } from '@ratchet/errors';
import { conversationTokens, fitConversation, type ConversationMessage } from './conversation-budget';
import { countTokens } from '@ratchet/agent';

const output = (lines: number, label: string) => Array.from({ length: lines }, (_, index) => `${label} line ${index}: some test output here`).join('\n');

/** system, task, then `rounds` of assistant tool call + tool output, then a final assistant message. */
function conversation(rounds: number): ConversationMessage[] {
  const messages: ConversationMessage[] = [
    { role: 'system', content: 'You are the coder. Use the tools.' },
    { role: 'user', content: 'Task: make tests/test_calc.py pass.' },
  ];
  for (let round = 0; round < rounds; round += 1) {
    messages.push({ role: 'assistant', content: '', toolCalls: [{ id: `call-${round}`, name: round % 2 === 0 ? 'run_tests' : 'read_file', arguments: `{"round":${round}}` }] });
    messages.push({ role: 'tool', toolCallId: `call-${round}`, content: output(200, `round ${round}`) });
  }
  messages.push({ role: 'assistant', content: 'Next I will edit calc.py.' });
  return messages;
}

describe('fitConversation', () => {
  it('returns a conversation under budget unchanged', () => {
    const messages = conversation(1);
    const fitted = fitConversation(messages, 1_000_000);
    expect(fitted).toEqual({ messages, tokens: conversationTokens(messages), elided: 0, taskTruncated: false });
  });

  it('with keepObservations, summarises older tool outputs and the long arguments before them even under the budget', () => {
    const content = output(120, 'file');
    const messages: ConversationMessage[] = [{ role: 'system', content: 'You are the coder.' }, { role: 'user', content: 'Task: fix calc.py.' }];
    for (let round = 0; round < 4; round += 1) {
      messages.push({ role: 'assistant', content: '', toolCalls: [{ id: `call-${round}`, name: 'write_file', arguments: JSON.stringify({ path: `calc${round}.py`, content }) }] });
      messages.push({ role: 'tool', toolCallId: `call-${round}`, content: output(100, `round ${round}`) });
    }
    const fitted = fitConversation(messages, 1_000_000, { keepObservations: 2 });
    expect(fitted.elided).toBe(2);
    expect(fitted.tokens).toBe(conversationTokens(fitted.messages));
    expect(fitted.tokens).toBeLessThan(conversationTokens(messages) * 0.6);
    // The two oldest rounds: outputs summarised, the file content in the call replaced, the call still JSON with its path.
    expect(fitted.messages[3]!.content).toMatch(/^\[output of write_file elided: 100 lines, \d+ tokens; run it again if needed\]$/);
    expect(JSON.parse(fitted.messages[2]!.toolCalls![0]!.arguments)).toEqual({ path: 'calc0.py', content: expect.stringMatching(/^\[write_file's content elided: 120 lines, \d+ tokens; what it did is in the workspace\]$/) });
    expect(fitted.messages[5]!.content).toMatch(/elided/);
    // The last two rounds, the system message and the task as they were.
    expect(fitted.messages.slice(6)).toEqual(messages.slice(6));
    expect(fitted.messages.slice(0, 2)).toEqual(messages.slice(0, 2));
    // Without the option, a conversation under the budget is untouched.
    expect(fitConversation(messages, 1_000_000).messages).toEqual(messages);
  });

  it('elides the oldest tool outputs first and keeps the system message, the task and the last messages', () => {
    const messages = conversation(4);
    const total = conversationTokens(messages);
    const perOutput = countTokens(messages[3]!.content);
    const fitted = fitConversation(messages, total - perOutput - perOutput / 2);
    expect(fitted.elided).toBe(2);
    expect(fitted.tokens).toBeLessThanOrEqual(total - perOutput - perOutput / 2);
    expect(fitted.tokens).toBe(conversationTokens(fitted.messages));
    expect(fitted.messages[3]!.content).toBe(`[output of run_tests elided: 200 lines, ${perOutput} tokens; run it again if needed]`);
    expect(fitted.messages[5]!.content).toMatch(/^\[output of read_file elided: 200 lines, \d+ tokens; run it again if needed\]$/);
    expect(fitted.messages[7]).toBe(messages[7]);
    expect(fitted.messages.slice(0, 3)).toEqual(messages.slice(0, 3));
    expect(fitted.messages.slice(6)).toEqual(messages.slice(6));
    expect(fitted.messages[3]).toMatchObject({ role: 'tool', toolCallId: 'call-0' });
    expect(messages[3]!.content).toContain('round 0 line 0');
  });

  it('never elides the last keepLast messages, even tool outputs', () => {
    const messages = conversation(3).slice(0, -1);
    // Over by nearly two outputs: both older ones must go, the newest stays.
    const budget = conversationTokens(messages) - 2 * countTokens(messages[3]!.content) + 100;
    const fitted = fitConversation(messages, budget, { keepLast: 2 });
    expect(fitted.tokens).toBeLessThanOrEqual(budget);
    expect(fitted.messages.at(-1)).toBe(messages.at(-1));
    expect(fitted.elided).toBe(2);
    expect(() => fitConversation(messages, conversationTokens(messages.slice(-1)), { keepLast: 1 })).toThrow(AppError);
  });

  it('elides user messages marked as observations, and names the tool from the message', () => {
    const messages: ConversationMessage[] = [
      { role: 'system', content: 'system' },
      { role: 'user', content: 'the task' },
      { role: 'user', content: `Observation:\n${output(100, 'ls')}` },
      { role: 'tool', name: 'list_files', content: output(100, 'files') },
      { role: 'assistant', content: 'done' },
      { role: 'user', content: 'go on' },
    ];
    const fitted = fitConversation(messages, 90, { isObservation: (message) => message.content.startsWith('Observation:') });
    expect(fitted.messages[2]!.content).toMatch(/^\[output of a tool elided: 101 lines/);
    expect(fitted.messages[3]!.content).toMatch(/^\[output of list_files elided: 100 lines/);
    expect(fitted.tokens).toBeLessThanOrEqual(90);
  });

  it('cuts the middle of the task when eliding is not enough, keeping its start and end', () => {
    const task = `GOAL: fix the parser.\n${'Background detail that goes on. '.repeat(400)}\nACCEPTANCE: all tests pass.`;
    const messages: ConversationMessage[] = [
      { role: 'system', content: 'system prompt' },
      { role: 'user', content: task },
      { role: 'tool', name: 'run_tests', content: output(50, 'tests') },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'continue' },
    ];
    const fitted = fitConversation(messages, 300);
    expect(fitted.taskTruncated).toBe(true);
    expect(fitted.elided).toBe(1);
    expect(fitted.tokens).toBeLessThanOrEqual(300);
    expect(fitted.tokens).toBe(conversationTokens(fitted.messages));
    expect(fitted.messages[1]!.content).toMatch(/^GOAL: fix the parser\./);
    expect(fitted.messages[1]!.content).toMatch(/ACCEPTANCE: all tests pass\.$/);
    expect(fitted.messages[1]!.content).toMatch(/\[… \d+ tokens of the task cut here to fit the prompt budget …\]/);
  });

  it('throws RESOURCE_EXHAUSTED naming the budget and the setting when the irreducible part does not fit', () => {
    const messages: ConversationMessage[] = [
      { role: 'system', content: 'a long system prompt '.repeat(100) },
      { role: 'user', content: 'task' },
    ];
    let caught: unknown;
    try {
      fitConversation(messages, 50);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(AppError);
    expect(caught).toMatchObject({ code: ErrorCode.RESOURCE_EXHAUSTED, isRetryable: false });
    expect((caught as AppError).message).toContain('budget of 50');
    expect((caught as AppError).message).toContain('coder.promptBudgetTokens');
    expect(() => fitConversation(messages, 50, { budgetKey: 'planner.promptBudgetTokens' })).toThrow(/planner\.promptBudgetTokens/);
  });

  it('stays within budget across budgets and conversation lengths, or throws', () => {
    for (const rounds of [0, 1, 5, 20]) {
      const messages = conversation(rounds);
      for (const budget of [10, 40, 100, 500, 2_000, 10_000, 100_000]) {
        try {
          const fitted = fitConversation(messages, budget);
          expect(fitted.tokens).toBeLessThanOrEqual(budget);
          expect(fitted.tokens).toBe(conversationTokens(fitted.messages));
        } catch (error) {
          expect(error).toMatchObject({ code: ErrorCode.RESOURCE_EXHAUSTED });
          // Only a budget below the last output (about 2,600 tokens) is irreducible.
          expect(budget).toBeLessThan(10_000);
        }
      }
    }
  });
});
