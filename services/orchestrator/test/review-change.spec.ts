import { describe, expect, it } from '@jest/globals';
import { Language, TaskStatus, type ProjectProfile, type ReviewRequest } from '@ratchet/contracts';
import { Effect } from '../src/domain/next-action';
import type { TaskRecord } from '../src/domain/records';
import { phaseRunners, type AgentClients, type PhaseRunner } from '../src/runner/phases';
import { iteration, phaseSettings, task } from './fixtures';

// What the reviewer reads is the change: the files the coder changed, each
// with the version it started from. A greenfield task started from a
// profile's files must not show the ones kept as given as new code.

const starting = { cli: 'def main(argv=None):\n    return 0\n', conftest: 'import pytest\n' };
const profile: ProjectProfile = {
  name: 'cli_tool',
  description: 'a command-line program',
  language: Language.LANGUAGE_PYTHON,
  layout: [
    { path: 'cli.py', purpose: 'the program', content: starting.cli },
    { path: 'tests/conftest.py', purpose: 'the run_cli fixture', content: starting.conftest },
    { path: 'README.md', purpose: 'written by the model', content: '' },
  ],
  testStyle: 'pytest',
  dependencies: [],
  prompt: '',
};

/** The review request the REVIEW phase sends for `record` at iteration 1 with `files`. */
async function reviewRequestOf(record: TaskRecord, files: { path: string; content: string }[]): Promise<ReviewRequest> {
  const sent: ReviewRequest[] = [];
  const reflector = {
    review: async (request: ReviewRequest) => {
      sent.push(request);
      return { findings: [], summary: 'fine', usage: undefined, replyFailure: undefined };
    },
  };
  const runners = phaseRunners({ planner: {}, coder: {}, tester: {}, reflector, safety: {}, memory: {} } as unknown as AgentClients, phaseSettings, () => new Date(0));
  const review = runners[Effect.REVIEW] as PhaseRunner;
  const state = { task: { ...record, status: TaskStatus.TASK_STATUS_REVIEWING, currentIteration: 1 }, iterations: [iteration(1, { files })] };
  await review(state, new AbortController().signal, { enteredAt: new Date(0), progress: async () => undefined });
  expect(sent).toHaveLength(1);
  return sent[0]!;
}

describe('the change a reviewer reads', () => {
  it("a profile task: only the files changed from the profile's, each with its starting version", async () => {
    const cli = 'def main(argv=None):\n    print("hi")\n    return 0\n';
    const request = await reviewRequestOf(task({ profile }), [
      { path: 'cli.py', content: cli },
      { path: 'tests/conftest.py', content: starting.conftest },
      { path: 'todo.py', content: 'ITEMS = []\n' },
    ]);
    expect(request.files.map((file) => file.path)).toEqual(['cli.py', 'todo.py']);
    expect(request.baseFiles).toEqual([{ path: 'cli.py', content: starting.cli }]);
  });

  it('a task without a profile or workspace: every file is new', async () => {
    const files = [{ path: 'app.py', content: 'x = 1\n' }];
    const request = await reviewRequestOf(task(), files);
    expect(request.files).toEqual(files);
    expect(request.baseFiles).toEqual([]);
  });

  it("a workspace task: the files that differ from the workspace's, with the workspace's versions", async () => {
    const workspace = [
      { path: 'calc.py', content: 'def add(a, b):\n    return a - b\n' },
      { path: 'util.py', content: 'X = 1\n' },
    ];
    const fixed = { path: 'calc.py', content: 'def add(a, b):\n    return a + b\n' };
    const request = await reviewRequestOf(task({ workspace }), [fixed, workspace[1]!]);
    expect(request.files).toEqual([fixed]);
    expect(request.baseFiles).toEqual([workspace[0]]);
  });
});
