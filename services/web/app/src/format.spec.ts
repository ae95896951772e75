import { describe, expect, it } from '@jest/globals';
import { enumLabel, formatCost, formatDuration, formatUsage, isTerminalStatus, oneLine, rankLessons, statusLabel, statusTone, toolDetail } from './format';

describe('format', () => {
  it('names statuses and enums for people, and colours statuses', () => {
    expect(statusLabel('TASK_STATUS_AWAITING_APPROVAL')).toBe('awaiting approval');
    expect(statusLabel(undefined)).toBe('queued');
    expect(enumLabel('APPROVAL_KIND_FINAL_RESULT', 'APPROVAL_KIND')).toBe('final result');
    expect(enumLabel(undefined, 'PHASE')).toBe('unspecified');
    expect(statusTone('TASK_STATUS_SUCCEEDED')).toBe('good');
    expect(statusTone('TASK_STATUS_AWAITING_ANSWER')).toBe('waiting');
    expect(statusTone('TASK_STATUS_TESTING')).toBe('running');
    expect(isTerminalStatus('TASK_STATUS_CANCELLED')).toBe(true);
    expect(isTerminalStatus('TASK_STATUS_AWAITING_APPROVAL')).toBe(false);
  });

  it('writes usage, cost and durations', () => {
    expect(formatCost(0.00421)).toBe('$0.0042');
    expect(formatCost(12.5)).toBe('$12.50');
    expect(formatUsage({ promptTokens: 10_000, completionTokens: 2_345, costUsd: 0.01, modelCalls: 1 })).toBe('12,345 tokens · $0.0100 · 1 model call');
    expect(formatUsage(undefined)).toBe('0 tokens · $0.0000');
    expect(formatDuration({ seconds: 3, nanos: 250_000_000 })).toBe('3.3 s');
    expect(formatDuration({ seconds: 185 })).toBe('3 min 05 s');
    expect(formatDuration({ seconds: 7800 })).toBe('2 h 10 min');
    expect(oneLine('a\n  b\tc', 120)).toBe('a b c');
    expect(oneLine('abcdef', 4)).toBe('abc…');
  });

  it('shows what identifies a tool call', () => {
    expect(toolDetail('{"command":"pytest -q"}')).toBe('pytest -q');
    expect(toolDetail('{"path":"app.py","start_line":3}')).toBe('app.py');
    expect(toolDetail('not json')).toBe('not json');
  });

  it('ranks lessons by weight, retired ones last, then standing, then helped tasks', () => {
    const ranked = rankLessons([
      { id: 'retired', status: 'LESSON_STATUS_RETIRED', weight: 0.9 },
      { id: 'light', status: 'LESSON_STATUS_PROMOTED', weight: 0.3 },
      { id: 'candidate', status: 'LESSON_STATUS_CANDIDATE', weight: 0.8 },
      { id: 'promoted', status: 'LESSON_STATUS_PROMOTED', weight: 0.8 },
      { id: 'helped', status: 'LESSON_STATUS_PROMOTED', weight: 0.8, stats: { appliedSucceeded: 3 } },
    ]);
    expect(ranked.map((lesson) => lesson.id)).toEqual(['helped', 'promoted', 'candidate', 'light', 'retired']);
  });
});
