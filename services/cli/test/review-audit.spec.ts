import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import path from 'node:path';
import { Severity, TaskStatus, TaskView } from '@ratchet/contracts';
import { auditReply, reviewReply } from '@ratchet/testing';
import { openApi } from '../src/api';
import { runGoal, showTask } from '../src/commands';
import { codeReply, planReply, RecordedOutput, reflectionReply, scripted, temporaryDirectory, testsReply } from './helpers';

// The optional review and audit phases end to end, embedded: every real
// service (safety's scanners, the sandbox, storage), the reviewer and the
// auditor as roles of the real reflector service; only the model is
// scripted. A blocking finding fails the first attempt like a failing test,
// the reflector and the coder see it, and the second attempt fixes it.
jest.setTimeout(300_000);

const averageCrashes = 'def average(values):\n    return sum(values) / len(values)\n';
const averageFixed = 'def average(values):\n    if not values:\n        return 0.0\n    return sum(values) / len(values)\n';
const averageTests = 'from stats import average\n\n\ndef test_average():\n    assert average([1, 2, 3]) == 2\n\n\ndef test_empty():\n    assert average([]) == 0.0\n';

const notesTraversal = 'import os\n\nBASE = os.path.join(os.path.dirname(__file__), "notes")\n\n\ndef read_note(name):\n    with open(os.path.join(BASE, name), encoding="utf-8") as handle:\n        return handle.read()\n';
const notesConfined =
  'import os\n\nBASE = os.path.realpath(os.path.join(os.path.dirname(__file__), "notes"))\n\n\ndef read_note(name):\n    path = os.path.realpath(os.path.join(BASE, name))\n    if os.path.dirname(path) != BASE:\n        raise ValueError("note names may not leave the notes directory")\n    with open(path, encoding="utf-8") as handle:\n        return handle.read()\n';
const notesTests =
  'import pytest\n\nfrom notes import read_note\n\n\ndef test_outside_is_refused():\n    with pytest.raises(ValueError):\n        read_note("../notes.py")\n';

describe('ratchet run --enable-review / --enable-audit (embedded)', () => {
  let dir: string;
  let remove: () => Promise<void>;

  beforeAll(async () => {
    ({ dir, remove } = await temporaryDirectory());
  });

  afterAll(async () => {
    await remove();
  });

  const shown = async (taskId: string) => {
    const output = new RecordedOutput();
    await showTask(taskId, { dataDir: path.join(dir, 'data') }, output);
    return output.all;
  };

  it('a blocking review finding fails the first attempt, and the next attempt fixes it', async () => {
    const { model, models } = scripted([
      { role: 'planner', reply: planReply('stats.py', 'tests/test_stats.py') },
      { role: 'coder', reply: codeReply('stats.py', averageCrashes) },
      {
        role: 'reviewer',
        reply: reviewReply([
          { severity: 'high', path: 'stats.py', line: 2, message: 'average([]) raises ZeroDivisionError', suggestion: 'return 0.0 for an empty list', blocking: true },
          { severity: 'low', path: 'stats.py', line: 1, category: 'style', message: 'values could be any iterable' },
        ]),
      },
      { role: 'reflector', reply: reflectionReply('average divides by zero on an empty list') },
      { role: 'coder', reply: codeReply('stats.py', averageFixed) },
      { role: 'reviewer', reply: reviewReply([], 'handles the empty list now') },
      { role: 'tester', reply: testsReply('tests/test_stats.py', averageTests) },
    ]);
    const result = await runGoal('a function that averages a list of numbers', { lang: 'python', out: path.join(dir, 'review'), dataDir: path.join(dir, 'data'), models, enableReview: true }, new RecordedOutput());
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    // The reflector and the second attempt's coder were told what the review blocked on.
    const prompts = model.calls.map((call) => ({ role: call.request.role, text: call.request.messages.map((message) => ('content' in message ? String(message.content) : '')).join('\n') }));
    expect(prompts.filter((call) => call.role === 'reflector')[0]?.text).toContain('average([]) raises ZeroDivisionError');
    expect(prompts.filter((call) => call.role === 'coder')[1]?.text).toContain('average([]) raises ZeroDivisionError');

    const api = await openApi({ dataDir: path.join(dir, 'data'), drive: false });
    try {
      const { iterations } = await api.getTask(result.task.id, TaskView.TASK_VIEW_FULL);
      expect(iterations).toHaveLength(2);
      expect(iterations[0]?.error).toMatchObject({ code: 'REVIEW_REJECTED', message: expect.stringContaining('stats.py:2: average([]) raises ZeroDivisionError') });
      expect(iterations[0]?.reviewFindings.map((finding) => [finding.severity, finding.blocking])).toEqual([
        [Severity.SEVERITY_HIGH, true],
        [Severity.SEVERITY_LOW, false],
      ]);
      expect(iterations[1]?.reviewFindings).toEqual([]);
      expect(iterations[1]?.testReport?.passed).toBe(2);
    } finally {
      await api.close();
    }
    const text = await shown(result.task.id);
    expect(text).toContain('optional phases: review');
    expect(text).toContain('review: HIGH (blocking) stats.py:2 average([]) raises ZeroDivisionError');
  });

  it('a high-severity audit finding fails the first attempt, and the next attempt fixes it', async () => {
    const { models } = scripted([
      { role: 'planner', reply: planReply('notes.py', 'tests/test_notes.py') },
      { role: 'coder', reply: codeReply('notes.py', notesTraversal) },
      {
        role: 'auditor',
        reply: auditReply([
          {
            severity: 'high',
            path: 'notes.py',
            line: 7,
            category: 'A01:2021-Broken Access Control',
            cwe: 'CWE-22',
            message: 'read_note joins a caller-given name to the notes directory: "../" reads any file',
            suggestion: 'resolve the path and refuse names outside the notes directory',
          },
        ]),
      },
      { role: 'reflector', reply: reflectionReply('read_note lets a name escape the notes directory') },
      { role: 'coder', reply: codeReply('notes.py', notesConfined) },
      { role: 'auditor', reply: auditReply([], [], 'the path is confined to the notes directory') },
      { role: 'tester', reply: testsReply('tests/test_notes.py', notesTests) },
    ]);
    const result = await runGoal('a function that reads a note by name from the notes directory', { lang: 'python', out: path.join(dir, 'audit'), dataDir: path.join(dir, 'data'), models, enableAudit: true }, new RecordedOutput());
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    const api = await openApi({ dataDir: path.join(dir, 'data'), drive: false });
    try {
      const { iterations } = await api.getTask(result.task.id, TaskView.TASK_VIEW_FULL);
      expect(iterations).toHaveLength(2);
      expect(iterations[0]?.error).toMatchObject({ code: 'AUDIT_FINDINGS', message: expect.stringContaining('(CWE-22)') });
      expect(iterations[0]?.auditFindings.find((finding) => finding.source === 'auditor')).toMatchObject({ severity: Severity.SEVERITY_HIGH, blocking: true, cwe: 'CWE-22' });
      expect(iterations[1]?.auditFindings.filter((finding) => finding.blocking)).toEqual([]);
    } finally {
      await api.close();
    }
    expect(await shown(result.task.id)).toContain('audit: HIGH (blocking) notes.py:7');
  });
});
