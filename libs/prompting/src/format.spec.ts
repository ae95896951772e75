import { describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Language, Severity, type ProjectProfile, type TaskSpec } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { formatProfile, formatReviewFindings, formatSpec, goalForPrompt } from './format';
import { loadPrompts } from './prompts';
import { countTokens } from '@ratchet/agent';

const emptySpec: TaskSpec = { summary: '', behaviour: '', inputs: '', outputs: '', interface: [], edgeCases: [], acceptanceCriteria: [], assumptions: [] };
const emptyProfile: ProjectProfile = { name: '', description: '', language: Language.LANGUAGE_UNSPECIFIED, layout: [], testStyle: '', dependencies: [], prompt: '' };

describe('formatSpec', () => {
  it('renders every part of a spec under a heading, acceptance criteria numbered, empty parts left out', () => {
    const text = formatSpec({
      ...emptySpec,
      summary: 'A todo CLI.',
      behaviour: 'Adds and lists items.',
      interface: ['todo add <text>', ' '],
      acceptanceCriteria: ['add then list shows the item', 'done 9 exits 1'],
      assumptions: ['todo.json in the working directory'],
    });
    expect(text).toBe(
      [
        'Spec (the goal made precise; where it is more specific than the goal, follow it):',
        'Summary: A todo CLI.',
        'Behaviour: Adds and lists items.',
        'Interface:',
        '- todo add <text>',
        'Acceptance criteria:',
        '1. add then list shows the item',
        '2. done 9 exits 1',
        'Assumptions (where the goal left a choice open):',
        '- todo.json in the working directory',
      ].join('\n'),
    );
  });

  it('renders nothing for a task without a spec, so its prompts stay as they were', () => {
    expect(formatSpec(undefined)).toBe('');
    expect(formatSpec(emptySpec)).toBe('');
  });
});

describe('formatProfile', () => {
  it('renders name, layout, test style, packages and instructions, and nothing without a profile', () => {
    const text = formatProfile({
      ...emptyProfile,
      name: 'web_app',
      description: 'a Flask app',
      layout: [
        { path: 'app.py', purpose: 'the app factory', content: 'from flask import Flask\n' },
        { path: 'templates/', purpose: '', content: '' },
      ],
      testStyle: "through Flask's test client",
      dependencies: [{ name: 'flask', versionSpec: '>=3' }, { name: 'pytest', versionSpec: '' }],
      prompt: 'Return JSON errors.',
    });
    expect(text).toBe(
      [
        'Project profile: web_app (a Flask app)',
        'Layout:',
        '- app.py: the app factory (starting content given)',
        '- templates/',
        "Test style: through Flask's test client",
        'Packages the profile uses: flask >=3, pytest',
        'Profile instructions:\nReturn JSON errors.',
      ].join('\n'),
    );
    expect(formatProfile(undefined)).toBe('');
    expect(formatProfile(emptyProfile)).toBe('');
    expect(formatProfile({ ...emptyProfile, prompt: 'x'.repeat(5_000) })).toContain('(1000 more characters cut)');
  });
});

describe('formatReviewFindings', () => {
  it('lists findings with severity, blocking, source, place, category and CWE, and the fix; nothing without findings', () => {
    const text = formatReviewFindings([
      { severity: Severity.SEVERITY_CRITICAL, path: 'app.py', line: 4, category: 'A03:2021-Injection', cwe: 'CWE-89', message: 'SQL built from input', suggestion: 'use parameters', blocking: true, source: 'auditor' },
      { severity: Severity.SEVERITY_LOW, path: '', line: 0, category: 'design', cwe: '', message: 'one module would do', suggestion: '', blocking: false, source: 'reviewer' },
      { severity: Severity.SEVERITY_HIGH, path: 'app.py', line: 0, category: '', cwe: 'CWE-78', message: 'shell=True', suggestion: '', blocking: true, source: 'py.subprocess-shell' },
    ]);
    expect(text.split('\n')).toEqual([
      'Review and audit findings on the last attempt (a blocking one counts like a failing test: it must be fixed):',
      '- [critical, blocking from auditor] app.py:4 (A03:2021-Injection, CWE-89): SQL built from input Fix: use parameters',
      '- [low from reviewer] (the change as a whole) (design): one module would do',
      '- [high, blocking from py.subprocess-shell] app.py (CWE-78): shell=True',
    ]);
    expect(formatReviewFindings([])).toBe('');
  });
});

describe('goalForPrompt', () => {
  it('keeps a goal that fits, and cuts a longer one at the budget with a note', () => {
    expect(goalForPrompt('  add two numbers \n')).toBe('add two numbers');
    const goal = `Start. ${'word '.repeat(20_000)}END`;
    const shown = goalForPrompt(goal, 1_000);
    expect(shown.startsWith('Start. word')).toBe(true);
    expect(shown).not.toContain('END');
    expect(shown).toMatch(/its first 1000 of \d+ tokens are shown above/);
    expect(countTokens(shown)).toBeLessThan(1_100);
  });
});

describe('loadPrompts', () => {
  it('names a role a prompts.yaml from an older version lacks, and where to copy it from', () => {
    const directory = mkdtempSync(path.join(tmpdir(), 'ratchet-prompts-'));
    const role = '  system: s\n  user: u\n';
    try {
      writeFileSync(path.join(directory, 'prompts.yaml'), ['planner', 'coder', 'coderAgent', 'tester', 'reflector'].map((name) => `${name}:\n${role}`).join(''));
      expect(() => loadPrompts(directory)).toThrow(expect.objectContaining({ code: ErrorCode.CONFIG_INVALID, message: expect.stringContaining('reprompter: missing; add the role') }));
      expect(() => loadPrompts(directory)).toThrow(/reviewer: missing.*auditor: missing/);
    } finally {
      rmSync(directory, { recursive: true, force: true });
    }
  });

  it('loads the shipped prompts, every role included', () => {
    const prompts = loadPrompts(path.resolve(__dirname, '../../../config'));
    expect(Object.keys(prompts).sort()).toEqual(['auditor', 'coder', 'coderAgent', 'planner', 'reflector', 'reprompter', 'reviewer', 'tester']);
  });
});
