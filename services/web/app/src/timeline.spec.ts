import { describe, expect, it } from '@jest/globals';
import { feedOf, lastSequenceOf, mergeEvents, timelineOf } from './timeline';
import type { TaskEvent } from './types';

const events: TaskEvent[] = [
  { sequence: 1, taskSubmitted: { task: { goal: 'a TODO CLI' } } },
  { sequence: 2, iteration: 1, phaseStarted: { phase: 'PHASE_PLANNING', attempt: 1 } },
  { sequence: 3, iteration: 1, phaseCompleted: { phase: 'PHASE_PLANNING', duration: { seconds: 1 }, usage: { promptTokens: 800, completionTokens: 200, modelCalls: 1 }, summary: 'a plan' } },
  { sequence: 4, iteration: 1, phaseStarted: { phase: 'PHASE_TESTING' } },
  { sequence: 5, iteration: 1, testRunCompleted: { report: { parsed: true, total: 4, passed: 3, failed: 1 } } },
  { sequence: 6, iteration: 1, phaseCompleted: { phase: 'PHASE_TESTING', duration: { seconds: 2 } } },
  { sequence: 7, iteration: 1, iterationCompleted: { testsPassed: false, testsPassedCount: 3, testsTotalCount: 4, failure: 'test_add: FileNotFoundError' } },
  { sequence: 8, iteration: 2, phaseStarted: { phase: 'PHASE_CODING' } },
];

describe('the task timeline', () => {
  it('lays out the phases of each iteration, a running one last, and how each iteration ended', () => {
    expect(timelineOf(events)).toEqual([
      {
        iteration: 1,
        toolCalls: 0,
        steps: [
          { phase: 'PHASE_PLANNING', state: 'done', attempt: 1, duration: { seconds: 1 }, usage: { promptTokens: 800, completionTokens: 200, modelCalls: 1 }, summary: 'a plan' },
          { phase: 'PHASE_TESTING', state: 'done', attempt: 1, duration: { seconds: 2 } },
        ],
        outcome: { passed: false, passedCount: 3, totalCount: 4, failure: 'test_add: FileNotFoundError' },
      },
      { iteration: 2, toolCalls: 0, steps: [{ phase: 'PHASE_CODING', state: 'running', attempt: 1 }] },
    ]);
  });

  it('puts a phase that started before its iteration existed (the first plan) in the iteration it completed in', () => {
    const early: TaskEvent[] = [
      { sequence: 1, iteration: 0, phaseStarted: { phase: 'PHASE_RETRIEVING' } },
      { sequence: 2, iteration: 0, phaseCompleted: { phase: 'PHASE_RETRIEVING' } },
      { sequence: 3, iteration: 0, phaseStarted: { phase: 'PHASE_PLANNING' } },
      { sequence: 4, iteration: 1, phaseCompleted: { phase: 'PHASE_PLANNING' } },
      { sequence: 5, iteration: 1, phaseStarted: { phase: 'PHASE_CODING' } },
    ];
    expect(timelineOf(early).map((row) => [row.iteration, row.steps.map((step) => `${step.phase}:${step.state}`)])).toEqual([
      [0, ['PHASE_RETRIEVING:done']],
      [1, ['PHASE_PLANNING:done', 'PHASE_CODING:running']],
    ]);
  });

  it('marks a phase that never completed as cut off once the task ended', () => {
    const ended: TaskEvent[] = [...events, { sequence: 9, taskCompleted: { status: 'TASK_STATUS_CANCELLED' } }];
    expect(timelineOf(ended)[1]?.steps).toEqual([{ phase: 'PHASE_CODING', state: 'failed', attempt: 1 }]);
  });

  it('merges a resent batch without doubling events, in sequence order', () => {
    const merged = mergeEvents(events.slice(0, 5), [...events.slice(3), events[0]!]);
    expect(merged.map((event) => event.sequence)).toEqual([1, 2, 3, 4, 5, 6, 7, 8]);
    expect(lastSequenceOf(merged)).toBe(8);
  });

  it('says what happened, one line per event worth reading', () => {
    expect(feedOf(events).map((item) => [item.sequence, item.tone, item.text])).toEqual([
      [1, 'info', 'submitted: a TODO CLI'],
      [3, 'info', 'planning done in 1.0 s (1,000 tokens · $0.0000 · 1 model call): a plan'],
      [5, 'bad', 'tests: 3 passed, 1 failed of 4'],
      [6, 'info', 'testing done in 2.0 s'],
      [7, 'bad', 'iteration failed: 3/4 tests, 0 tokens · $0.0000: test_add: FileNotFoundError'],
    ]);
    expect(feedOf([{ sequence: 9, approvalRequested: { gate: { kind: 'APPROVAL_KIND_FINAL_RESULT', summary: 'tests pass' } } }])[0]).toMatchObject({ tone: 'waiting', text: 'waiting for approval (final result): tests pass' });
  });
});
