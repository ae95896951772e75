import { describe, expect, it } from '@jest/globals';
import { AppError, ErrorCode } from '@ratchet/errors';
import { z } from 'zod';
import { conversationTokens } from './conversation-budget';
import { cutText, fitGoal, fitPrompt, replySchemaTokens, shareTokens, type PromptSection } from './prompt-budget';
import { renderTemplate, type RolePrompt } from './prompts';
import { countTokens } from '@ratchet/agent';

const prompt: RolePrompt = {
  system: 'You are the reflector. Language: {{language}}.',
  user: 'Goal: {{goal}}\n\nCode:\n{{files}}\n\nTest report:\n{{testReport}}\n\nOutput:\n{{stderr}}\n\nAgain, the language: {{language}}',
};

const lines = (count: number, label: string) => Array.from({ length: count }, (_, index) => `${label} line ${index}: something happened here`).join('\n');

/** What the model is sent, counted as the coder's budget and the bench count it. */
function sent(values: Readonly<Record<string, string>>): number {
  return conversationTokens([
    { role: 'system', content: renderTemplate(prompt.system, values) },
    { role: 'user', content: renderTemplate(prompt.user, values) },
  ]);
}

describe('shareTokens', () => {
  it('gives every part its need when all fit, and shares by weight what the small parts leave', () => {
    expect(shareTokens([10, 20, 30], 100)).toEqual([10, 20, 30]);
    expect(shareTokens([10, 500, 500], 310)).toEqual([10, 150, 150]);
    expect(shareTokens([10, 500, 500], 310, [1, 1, 2])).toEqual([10, 100, 200]);
    expect(shareTokens([0, 50], 10)).toEqual([0, 10]);
    expect(shareTokens([5, 5], -3)).toEqual([0, 0]);
  });
});

describe('cutText', () => {
  it('keeps a text that fits, and cuts one that does not at a line with a note saying how much of what went', () => {
    const text = lines(400, 'report');
    expect(cutText('short', 10)).toBe('short');
    const cut = cutText(text, 300, { label: 'the test report' });
    expect(countTokens(cut)).toBeLessThanOrEqual(300);
    expect(cut.startsWith('report line 0:')).toBe(true);
    expect(cut).toMatch(/something happened here\n\[… \d+ more tokens of the test report cut here to fit the prompt budget\]$/);
  });

  it('keeps the end of a log when asked, and gives a bare note or nothing when even the note does not fit', () => {
    const tail = cutText(lines(400, 'log'), 200, { label: 'the output', keep: 'end' });
    expect(countTokens(tail)).toBeLessThanOrEqual(200);
    expect(tail).toMatch(/^\[… the first \d+ tokens of the output cut here to fit the prompt budget\]\nlog line \d+/);
    expect(tail.endsWith('log line 399: something happened here')).toBe(true);
    expect(cutText(lines(400, 'log'), 14, { label: 'the output' })).toBe('[the output left out: over the prompt budget]');
    expect(cutText(lines(400, 'log'), 3)).toBe('');
  });
});

describe('fitGoal', () => {
  it("shows a goal whole when it fits, else its start with goalForPrompt's note, within the limit", () => {
    expect(fitGoal('  add two numbers ', 100)).toBe('add two numbers');
    const goal = `Build a tracker. ${'Each item has a name and a place. '.repeat(500)}THE-END`;
    const fitted = fitGoal(goal, 500);
    expect(countTokens(fitted)).toBeLessThanOrEqual(500);
    expect(fitted).toMatch(/^Build a tracker\./);
    expect(fitted).toMatch(/its first \d+ of \d+ tokens are shown above/);
    expect(fitted).not.toContain('THE-END');
  });
});

describe('fitPrompt', () => {
  const sections = (files: string, report: string, stderr: string): PromptSection[] => [
    { name: 'language', text: 'python', fixed: true },
    { name: 'goal', text: 'make the failing test pass', fit: (tokens) => fitGoal('make the failing test pass', tokens), weight: 2 },
    { name: 'files', text: files, weight: 3 },
    { name: 'testReport', text: report, weight: 2 },
    { name: 'stderr', text: stderr, fit: (tokens) => cutText(stderr, tokens, { label: 'the output', keep: 'end' }) },
  ];

  it('leaves a prompt that fits as it is', () => {
    const fitted = fitPrompt(prompt, sections('--- a.py', '1 failed', 'boom'), 1_000, { budgetKey: 'reflector.promptBudgetTokens' });
    expect(fitted.values).toEqual({ language: 'python', goal: 'make the failing test pass', files: '--- a.py', testReport: '1 failed', stderr: 'boom' });
    expect(fitted.shortened).toEqual([]);
    expect(fitted.tokens).toBe(sent(fitted.values));
  });

  it('keeps whole a prompt over the budget in bytes but not in tokens, and counts it as sent', () => {
    // About five bytes a token: the bytes alone would say it does not fit, the count says it does.
    const files = lines(40, 'code');
    const values = { language: 'python', goal: 'make the failing test pass', files, testReport: '1 failed', stderr: 'boom' };
    const tokens = sent(values);
    const bytes = Buffer.byteLength(renderTemplate(prompt.system, values) + renderTemplate(prompt.user, values), 'utf8');
    expect(bytes).toBeGreaterThan(2 * tokens);
    for (const budget of [tokens, Math.floor((tokens + bytes) / 2), bytes + 8]) {
      const fitted = fitPrompt(prompt, sections(files, '1 failed', 'boom'), budget, { budgetKey: 'reflector.promptBudgetTokens' });
      expect(fitted.values).toEqual(values);
      expect(fitted.shortened).toEqual([]);
      expect(fitted.tokens).toBe(tokens);
    }
    const short = fitPrompt(prompt, sections(files, '1 failed', 'boom'), tokens - 1, { budgetKey: 'reflector.promptBudgetTokens' });
    expect(short.shortened).toEqual(['files']);
    expect(short.tokens).toBeLessThanOrEqual(tokens - 1);
  });

  it('fits large sections under the budget, counting what is sent, and keeps small ones whole', () => {
    const files = lines(3_000, 'code');
    const fitted = fitPrompt(prompt, sections(files, lines(2_000, 'report'), lines(2_000, 'stderr')), 2_000, { budgetKey: 'reflector.promptBudgetTokens' });
    expect(fitted.tokens).toBeLessThanOrEqual(2_000);
    expect(fitted.tokens).toBe(sent(fitted.values));
    expect(fitted.values['goal']).toBe('make the failing test pass');
    expect(fitted.shortened).toEqual(['files', 'testReport', 'stderr']);
    // The shares follow the weights: the code 3, the report 2, the output 1.
    const code = countTokens(fitted.values['files'] ?? '');
    const report = countTokens(fitted.values['testReport'] ?? '');
    const stderr = countTokens(fitted.values['stderr'] ?? '');
    expect(code).toBeGreaterThan(report);
    expect(report).toBeGreaterThan(stderr);
    expect(fitted.values['stderr']).toMatch(/stderr line 1999: something happened here$/);
    expect(fitted.values['files']).toMatch(/more tokens of the files cut here to fit the prompt budget\]$/);
  });

  it('counts a placeholder used twice twice, and holds a section to its maxTokens even with room', () => {
    const twice: RolePrompt = { system: '{{code}}', user: '{{code}} {{goal}}' };
    const fitted = fitPrompt(twice, [{ name: 'code', text: lines(500, 'code') }, { name: 'goal', text: lines(100, 'goal'), maxTokens: 50 }], 1_500, { budgetKey: 'x.promptBudgetTokens' });
    expect(fitted.tokens).toBeLessThanOrEqual(1_500);
    expect(countTokens(fitted.values['goal'] ?? '')).toBeLessThanOrEqual(50);
    expect(fitted.shortened).toEqual(['code', 'goal']);
  });

  it('keeps the reply schema sent beside the messages inside the budget', () => {
    const schema = z.object({ rootCause: z.string(), confidence: z.number().min(0).max(1), tags: z.array(z.string()) });
    const reserved = replySchemaTokens(schema);
    expect(reserved).toBe(countTokens(JSON.stringify({ type: 'object', properties: { rootCause: { type: 'string' }, confidence: { type: 'number', minimum: 0, maximum: 1 }, tags: { type: 'array', items: { type: 'string' } } }, required: ['rootCause', 'confidence', 'tags'], additionalProperties: false })) + 12);
    const fitted = fitPrompt(prompt, sections(lines(3_000, 'code'), 'r', 's'), 1_000, { budgetKey: 'reflector.promptBudgetTokens', reservedTokens: reserved });
    expect(fitted.tokens + reserved).toBeLessThanOrEqual(1_000);
    expect(fitted.tokens + reserved).toBeGreaterThan(900);
  });

  it('names the setting to raise when the template and fixed values alone are over the budget', () => {
    const caught = (() => {
      try {
        fitPrompt(prompt, [{ name: 'language', text: lines(200, 'rule'), fixed: true }, { name: 'goal', text: 'x' }, { name: 'files', text: '' }, { name: 'testReport', text: '' }, { name: 'stderr', text: '' }], 500, {
          budgetKey: 'reflector.promptBudgetTokens',
        });
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    expect(caught).toBeInstanceOf(AppError);
    expect((caught as AppError).code).toBe(ErrorCode.RESOURCE_EXHAUSTED);
    expect((caught as AppError).message).toMatch(/over the budget of 500; raise reflector\.promptBudgetTokens/);
  });

  it('asks a section built on demand for its value at its share, and cuts it again when it answers too long', () => {
    const asked: number[] = [];
    const fitted = fitPrompt(
      prompt,
      [
        { name: 'language', text: 'python', fixed: true },
        { name: 'goal', text: 'g' },
        { name: 'files', tokens: 1_000_000, fit: (tokens) => (asked.push(tokens), lines(5_000, 'too long')) },
        { name: 'testReport', text: 'r' },
        { name: 'stderr', text: 's' },
      ],
      1_000,
      { budgetKey: 'reflector.promptBudgetTokens' },
    );
    expect(asked.length).toBeGreaterThanOrEqual(1);
    expect(fitted.tokens).toBeLessThanOrEqual(1_000);
    expect(fitted.values['files']).toMatch(/cut here to fit the prompt budget\]$/);
  });
});
