import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { StopReason, TaskStatus } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { resumeTask, runGoal, showTask } from '../src/commands';
import { codeReply, planReply, RecordedOutput, reflectionReply, scripted, temporaryDirectory, testsReply } from './helpers';

// Budgets, bad model replies and a broken environment, end to end with the
// real services; only the model is scripted.
jest.setTimeout(120_000);

const goodCalc = 'def add(a, b):\n    return a + b\n';
const goodTest = 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n';

describe('ratchet run limits and faults', () => {
  let dir: string;
  let remove: () => Promise<void>;
  const saved = { ...process.env };
  beforeAll(async () => {
    ({ dir, remove } = await temporaryDirectory());
    process.env['RATCHET_CONFIG_DIR'] = path.resolve(__dirname, '../../../config');
  });
  afterAll(async () => {
    process.env = saved;
    await remove();
  });
  const options = (name: string) => ({ lang: 'python', out: path.join(dir, name), dataDir: path.join(dir, 'data') });

  it('stops before the model call that would exceed the token budget, keeping the work so far', async () => {
    process.env['RATCHET_ORCHESTRATOR_MAX_TOKENS'] = '2000';
    try {
      const { model, models } = scripted([
        { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py'), usage: { promptTokens: 1000, completionTokens: 200 } },
        { role: 'coder', reply: codeReply('calc.py', goodCalc), usage: { promptTokens: 900, completionTokens: 100 } },
      ]);
      const result = await runGoal('add two numbers', { ...options('budget'), models }, new RecordedOutput());
      expect(result.task.status).toBe(TaskStatus.TASK_STATUS_FAILED);
      expect(result.task.stopReason).toBe(StopReason.STOP_REASON_TOKEN_BUDGET);
      expect(result.task.statusReason).toBe('used 2200 of 2000 tokens');
      expect(model.remaining).toBe(0);
      const shown = new RecordedOutput();
      await showTask(result.task.id, { dataDir: path.join(dir, 'data') }, shown);
      expect(shown.all).toContain('files: calc.py');
    } finally {
      delete process.env['RATCHET_ORCHESTRATOR_MAX_TOKENS'];
    }
  });

  it('resumes a task that ran out of iterations with more of them and a hint, keeping its history', async () => {
    const first = scripted([
      { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: codeReply('calc.py', 'def add(a, b):\n    return a - b\n') },
      { role: 'tester', reply: testsReply('tests/test_calc.py', goodTest) },
      { role: 'reflector', reply: reflectionReply('add subtracts') },
    ]);
    const failed = await runGoal('add two numbers', { ...options('resume'), maxIterations: '1', models: first.models }, new RecordedOutput());
    expect(failed.task.stopReason).toBe(StopReason.STOP_REASON_MAX_ITERATIONS);

    // Without more iterations it would stop at once: refused, saying what to add.
    const none = scripted([]);
    await expect(resumeTask(failed.task.id, { dataDir: path.join(dir, 'data'), models: none.models }, new RecordedOutput())).rejects.toMatchObject({
      code: ErrorCode.FAILED_PRECONDITION,
      message: expect.stringContaining('--add-iterations'),
    });

    // The hint reaches the new plan, and the coder sees the last failure.
    const second = scripted([
      { role: 'planner', expect: ['resumed by the user: use the plus operator'], reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', expect: ['add subtracts'], reply: codeReply('calc.py', goodCalc) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', goodTest) },
    ]);
    const progress = new RecordedOutput();
    const resumed = await resumeTask(
      failed.task.id.slice(0, 8),
      { dataDir: path.join(dir, 'data'), models: second.models, addIterations: '2', hint: 'use the plus operator', out: path.join(dir, 'resumed') },
      progress,
    );
    expect(resumed.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    expect(resumed.task.currentIteration).toBe(2);
    expect(resumed.written).toContain(path.join(dir, 'resumed', 'calc.py'));
    expect(progress.all).toMatch(/resumed \(PLANNING\)/);
    expect(second.model.remaining).toBe(0);
    const shown = new RecordedOutput();
    await showTask(failed.task.id, { dataDir: path.join(dir, 'data') }, shown);
    expect(shown.all).toContain('iteration 1: failed (TESTS_FAILED)');
    expect(shown.all).toContain('iteration 2: passed');

    // A task that did not fail cannot be resumed.
    await expect(resumeTask(failed.task.id, { dataDir: path.join(dir, 'data'), models: none.models, addIterations: '1' }, new RecordedOutput())).rejects.toMatchObject({
      code: ErrorCode.FAILED_PRECONDITION,
      message: expect.stringContaining('only a FAILED task can be resumed'),
    });
  });

  it('tells the planner on a resume what really failed, without pushing a new approach, and counts the resume', async () => {
    const first = scripted([
      { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: codeReply('calc.py', 'def add(a, b):\n    return a - b\n') },
      { role: 'tester', reply: testsReply('tests/test_calc.py', goodTest) },
      { role: 'reflector', reply: reflectionReply('add subtracts') },
    ]);
    const failed = await runGoal('add two numbers', { ...options('evidence'), maxIterations: '1', models: first.models }, new RecordedOutput());
    expect(failed.task.stopReason).toBe(StopReason.STOP_REASON_MAX_ITERATIONS);
    const second = scripted([
      { role: 'planner', expect: ['Why: resumed by the user', 'What failed in the last attempt:', 'assert -1 == 5', 'keep the design'], reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: codeReply('calc.py', goodCalc) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', goodTest) },
    ]);
    const resumed = await resumeTask(failed.task.id, { dataDir: path.join(dir, 'data'), models: second.models, addIterations: '1', out: path.join(dir, 'evidence-resumed') }, new RecordedOutput());
    expect(resumed.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    const prompt = second.model.calls[0]!.request.messages.map((message) => message.content).join('\n');
    const evidence = prompt.slice(prompt.indexOf('What failed in the last attempt:'), prompt.indexOf('Reflection on that failure'));
    expect(evidence).toContain('test_add');
    expect(evidence).not.toContain('<n>');
    expect(prompt).not.toContain('The previous plan failed');
    expect(prompt).not.toContain('Choose a different approach');
    const shown = new RecordedOutput();
    await showTask(failed.task.id, { dataDir: path.join(dir, 'data') }, shown);
    expect(shown.all).toContain('re-plans: 0, resumes: 1');
    // The lesson as memory kept it (this data directory may already hold it: then it was merged), as the live output named it.
    expect(shown.all).toMatch(/lesson (stored|merged into): "Lesson: add subtracts"/);
  });

  it('counts rejected replies and their repair round in the tokens, and stops at the budget they use up', async () => {
    process.env['RATCHET_ORCHESTRATOR_MAX_TOKENS'] = '2000';
    try {
      const { model, models } = scripted([
        { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py'), usage: { promptTokens: 1000, completionTokens: 200 } },
        { role: 'coder', reply: '{"files": "not a list"}', usage: { promptTokens: 400, completionTokens: 100 } },
        { role: 'coder', reply: 'no JSON at all', usage: { promptTokens: 450, completionTokens: 50 } },
      ]);
      const result = await runGoal('add two numbers', { ...options('rejected-tokens'), models }, new RecordedOutput());
      expect(model.remaining).toBe(0);
      // 1200 for the plan and 1000 for the two rejected coder replies: the budget stops the task before the next model call.
      expect(result.task.usage).toMatchObject({ promptTokens: 1850, completionTokens: 350, modelCalls: 3 });
      expect(result.task).toMatchObject({ status: TaskStatus.TASK_STATUS_FAILED, stopReason: StopReason.STOP_REASON_TOKEN_BUDGET, statusReason: 'used 2200 of 2000 tokens' });
    } finally {
      delete process.env['RATCHET_ORCHESTRATOR_MAX_TOKENS'];
    }
  });

  it('asks again for a shorter reply when one is cut at the length limit, and never learns a lesson from a cut reply', async () => {
    const cut = JSON.stringify({ files: [{ path: 'calc.py', content: goodCalc }], deletedPaths: [], summary: 's' }).slice(0, 40);
    const { model, models } = scripted([
      { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: cut, finishReason: 'length' },
      { role: 'coder', expect: ['cut off at the length limit', 'fewer or smaller files'], reply: cut, finishReason: 'length' },
      { role: 'reflector', expect: ['MODEL_REPLY_INVALID', 'cut off at the length limit'], reply: reflectionReply('the reply was cut off') },
      { role: 'coder', reply: codeReply('calc.py', goodCalc) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', goodTest) },
    ]);
    const output = new RecordedOutput();
    const result = await runGoal('add two numbers', { ...options('cut-reply'), models }, output);
    expect(model.remaining).toBe(0);
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    expect(result.task.currentIteration).toBe(2);
    expect(output.all).toContain('cut off at the length limit');
    // A reply-format failure is recorded as such, and memory learns nothing from it.
    expect(output.all).not.toMatch(/\[iteration 1\] lesson stored/);
  });

  it('treats a 5 MB reply as a failed attempt with a clear error, and goes on', async () => {
    const { model, models } = scripted([
      { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: 'x'.repeat(5_000_000) },
      { role: 'reflector', expect: ['MODEL_REPLY_INVALID', 'bytes'], reply: reflectionReply('the reply was far too long') },
      { role: 'coder', reply: codeReply('calc.py', goodCalc) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', goodTest) },
    ]);
    const huge = new RecordedOutput();
    const result = await runGoal('add two numbers', { ...options('huge'), models }, huge);
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    expect(result.task.currentIteration).toBe(2);
    expect(model.remaining).toBe(0);
  });

  it('rewrites generated tests that do not parse instead of blaming the code', async () => {
    const { model, models } = scripted([
      { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: codeReply('calc.py', goodCalc) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', 'def test_add(:\n    pass\n') },
      { role: 'reflector', expect: ['do not parse'], reply: reflectionReply('the tests had a syntax error') },
      { role: 'coder', reply: codeReply('calc.py', goodCalc) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', goodTest) },
    ]);
    const result = await runGoal('add two numbers', { ...options('unparseable'), models }, new RecordedOutput());
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    expect(model.remaining).toBe(0);
  });

  it('ends the task with what to do when the sandbox image is missing, keeping the record', async () => {
    process.env['RATCHET_SANDBOX_IMAGE'] = 'ratchet-sandbox:missing';
    try {
      const { models } = scripted([
        { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
        { role: 'coder', reply: codeReply('calc.py', goodCalc) },
        { role: 'tester', reply: testsReply('tests/test_calc.py', goodTest) },
      ]);
      const output = new RecordedOutput();
      const result = await runGoal('add two numbers', { ...options('noimage'), models }, output);
      expect(result.task.stopReason).toBe(StopReason.STOP_REASON_ERROR);
      expect(result.task.statusReason).toMatch(/TESTING failed: FAILED_PRECONDITION: the sandbox image ratchet-sandbox:missing is missing; build it with deploy\/sandbox\/build-image.sh/);
    } finally {
      delete process.env['RATCHET_SANDBOX_IMAGE'];
    }
  });

  it('rejects a 100 KB goal with the limit', async () => {
    const { models } = scripted([]);
    await expect(runGoal('x'.repeat(100_000), { ...options('long'), models }, new RecordedOutput())).rejects.toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('keep it under 10000') });
  });

  it('prints machine-readable events with --json', async () => {
    const { models } = scripted([
      { role: 'planner', reply: planReply('calc.py', 'tests/test_calc.py') },
      { role: 'coder', reply: codeReply('calc.py', goodCalc) },
      { role: 'tester', reply: testsReply('tests/test_calc.py', goodTest) },
    ]);
    const output = new RecordedOutput();
    await runGoal('add two numbers', { ...options('json'), models, json: true }, output);
    const events = output.lines.map((line) => JSON.parse(line) as { sequence: number; payload?: unknown; taskCompleted?: { status: string } });
    expect(events.map((event) => event.sequence)).toEqual(events.map((_, index) => index + 1));
    expect(events[events.length - 1]?.taskCompleted?.status).toBe('TASK_STATUS_SUCCEEDED');
    expect(output.errors).toEqual([]);
  });
});
