import { writeFile } from 'node:fs/promises';

// Model replies and whole scripts for tests and benchmarks that drive Ratchet
// with a scripted model: JSON in the shapes the role services validate.

/** A planner reply: one code file and one test file, and the third-party packages it declares. */
export const planReply = (file: string, test: string, testEdits?: { changesTests: boolean; reason?: string }, dependencies: readonly { name: string; versionSpec: string }[] = []) =>
  JSON.stringify({
    summary: `${file} and its tests`,
    steps: [{ description: `write ${file}`, paths: [file] }],
    files: [
      { path: file, purpose: 'code', isTest: false },
      { path: test, purpose: 'tests', isTest: true },
    ],
    testStrategy: 'pytest',
    dependencies,
    appliedLessonIds: [],
    // A workspace task with its own tests asks the planner whether the goal wants them changed.
    ...(testEdits === undefined ? {} : { changesTests: testEdits.changesTests, changesTestsReason: testEdits.reason ?? '' }),
  });

/** A coder reply writing one file. */
export const codeReply = (path: string, content: string) => JSON.stringify({ files: [{ path, content }], deletedPaths: [], summary: `wrote ${path}` });

/** A tester reply writing one test file. */
export const testsReply = (path: string, content: string) => JSON.stringify({ tests: [{ path, content }], summary: 'tests' });

/** A reflector reply with a candidate lesson. */
export const reflectionReply = (rootCause: string, replanRecommended = false) =>
  JSON.stringify({
    rootCause,
    hypothesis: 'fixing it makes the test pass',
    fixDirection: `fix: ${rootCause}`,
    confidence: 0.7,
    replanRecommended,
    lesson: { title: `Lesson: ${rootCause}`, body: `Avoid this: ${rootCause}.`, tags: ['test'] },
    relevantLessonIds: [],
  });

/** The parts of a spec a reprompter reply may set; the rest get defaults. */
export interface SpecReplyParts {
  readonly summary?: string;
  readonly behaviour?: string;
  readonly inputs?: string;
  readonly outputs?: string;
  readonly interface?: readonly string[];
  readonly edgeCases?: readonly string[];
  readonly acceptanceCriteria?: readonly string[];
  readonly assumptions?: readonly string[];
}

/** A reprompter reply with a spec (and no questions); parts not given get short defaults that pass the schema. */
export const specReply = (spec: SpecReplyParts = {}) =>
  JSON.stringify({
    questions: [],
    spec: {
      summary: spec.summary ?? 'A function that adds two numbers.',
      behaviour: spec.behaviour ?? 'add(a, b) returns the sum of a and b.',
      inputs: spec.inputs ?? 'two numbers',
      outputs: spec.outputs ?? 'their sum',
      interface: spec.interface ?? ['add(a: float, b: float) -> float'],
      edgeCases: spec.edgeCases ?? ['negative numbers are added like any others'],
      acceptanceCriteria: spec.acceptanceCriteria ?? ['add(2, 3) returns 5', 'add(-1, 1) returns 0'],
      assumptions: spec.assumptions ?? [],
    },
  });

/** A clarifying question as a reprompter reply asks it; `why` and `assumption` get defaults. */
export interface QuestionReplyParts {
  readonly question: string;
  readonly why?: string;
  readonly options?: readonly string[];
  readonly assumption?: string;
}

/** A reprompter reply asking clarifying questions first (spec null); ids are assigned by the planner service (q1, q2, ...). */
export const questionsReply = (questions: readonly (QuestionReplyParts | string)[]) =>
  JSON.stringify({
    questions: questions.map((entry) => {
      const question = typeof entry === 'string' ? { question: entry } : entry;
      return { question: question.question, why: question.why ?? 'the answer changes what is built', options: question.options ?? [], assumption: question.assumption ?? 'the simplest reading of the goal' };
    }),
    spec: null,
  });

/** A finding as a reviewer or auditor reply states it; everything but the message has a default. */
export interface FindingReplyParts {
  /** critical, high, medium, low or info (synonyms and other cases are accepted too). Default medium. */
  readonly severity?: string;
  /** A path of the change; '' (default) for the change as a whole. */
  readonly path?: string;
  /** The line in the new file; 0 (default) when not tied to one. */
  readonly line?: number;
  /** Review: correctness (default), security, error-handling, ...; audit: the OWASP category, e.g. A03:2021-Injection (default ''). */
  readonly category?: string;
  /** Audit only: CWE-89. Default ''. */
  readonly cwe?: string;
  readonly message: string;
  readonly suggestion?: string;
  /** Review only: the reviewer's blocking flag. Default false. */
  readonly blocking?: boolean;
}

/** A reviewer reply: a summary and findings. */
export const reviewReply = (findings: readonly FindingReplyParts[] = [], summary = 'reviewed the change') =>
  JSON.stringify({
    summary,
    findings: findings.map((finding) => ({
      severity: finding.severity ?? 'medium',
      path: finding.path ?? '',
      line: finding.line ?? 0,
      category: finding.category ?? 'correctness',
      message: finding.message,
      suggestion: finding.suggestion ?? '',
      blocking: finding.blocking ?? false,
    })),
  });

/** The auditor's verdict on a scanner finding, by its 1-based number in the request. */
export interface ScannerVerdictParts {
  readonly number: number;
  readonly real: boolean;
  readonly reason?: string;
}

/** An auditor reply: a summary, its own findings and a verdict on each scanner finding of the request (all must be judged). */
export const auditReply = (findings: readonly FindingReplyParts[] = [], scannerVerdicts: readonly ScannerVerdictParts[] = [], summary = 'audited the change') =>
  JSON.stringify({
    summary,
    findings: findings.map((finding) => ({
      severity: finding.severity ?? 'medium',
      path: finding.path ?? '',
      line: finding.line ?? 0,
      category: finding.category ?? '',
      cwe: finding.cwe ?? '',
      message: finding.message,
      suggestion: finding.suggestion ?? '',
    })),
    scannerVerdicts: scannerVerdicts.map((verdict) => ({ number: verdict.number, real: verdict.real, reason: verdict.reason ?? (verdict.real ? 'untrusted input reaches it' : 'no untrusted input reaches it') })),
  });

/** A goal the distributed tests submit, with a tag only its own turns expect. */
export interface ScriptedGoal {
  readonly goal: string;
  readonly tag: string;
  /** The first attempt fails a test; the reflector explains; the second passes. */
  readonly failFirst?: boolean;
  /** Tests that sleep this long, for a task to still be running when acted on. */
  readonly slowSeconds?: number;
  /** Third-party packages the plan declares. */
  readonly dependencies?: readonly { readonly name: string; readonly versionSpec: string }[];
  /** Submitted with the reprompter on: it asks these first, then writes a spec quoting the first answer. */
  readonly questions?: readonly string[];
}

/** `count` goals, tagged `[name-01]`, `[name-02]`, ... so no tag is a prefix of another. */
export function scriptedGoals(name: string, count: number, extra: Partial<ScriptedGoal> = {}): ScriptedGoal[] {
  return Array.from({ length: count }, (_, index) => {
    const tag = `[${name}-${String(index + 1).padStart(2, '0')}]`;
    return { goal: `a function that adds two numbers ${tag}`, tag, ...extra };
  });
}

/**
 * Writes a by-expect model script (every role's turns for every goal) to
 * `file`: each role process keeps its own turns, and concurrent tasks find
 * theirs by tag, whatever order the calls arrive in.
 */
export async function writeScript(file: string, goals: readonly ScriptedGoal[], options: { times?: number } = {}): Promise<void> {
  const turns = goals.flatMap(({ goal, tag, failFirst, slowSeconds, dependencies, questions }) => {
    // The goal line of the prompt, not the bare tag: retrieved lessons quote other tasks' goals.
    const own = `Goal: ${goal}\n`;
    const module = `adder_${tag.replace(/\W/g, '_').replace(/^_+|_+$/g, '')}`;
    const code = `${module}.py`;
    const test = `tests/test_${module}.py`;
    const sleep = slowSeconds === undefined ? '' : `import time\ntime.sleep(${slowSeconds})\n`;
    const good = codeReply(code, 'def add(a, b):\n    return a + b\n');
    return [
      ...(questions === undefined
        ? []
        : [
            // Before any answer the prompt lists none; after them, each answer follows its question.
            { role: 'reprompter', expect: [own, 'with their answers:\n(none)'], reply: questionsReply(questions) },
            { role: 'reprompter', expect: [own, 'Answer: '], reply: specReply({ summary: `add(a, b) for ${tag}`, acceptanceCriteria: ['add(2, 3) returns 5', 'add(-1, 1) returns 0'] }) },
          ]),
      { role: 'planner', expect: [own], reply: planReply(code, test, undefined, dependencies) },
      ...(failFirst
        ? [
            { role: 'coder', expect: [own, '(first attempt)'], reply: codeReply(code, 'def add(a, b):\n    return a - b\n') },
            { role: 'reflector', expect: [own], reply: reflectionReply('add subtracts instead of adding') },
          ]
        : []),
      { role: 'coder', expect: [own], reply: good },
      { role: 'tester', expect: [own], reply: testsReply(test, `${sleep}from ${module} import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_negative():\n    assert add(-1, 1) == 0\n`) },
    ];
  });
  // `times` > 1 lets a phase that was cut off (a killed orchestrator) ask its model again.
  const repeatable = options.times === undefined ? turns : turns.map((turn) => ({ ...turn, times: options.times }));
  await writeFile(file, JSON.stringify({ order: 'by-expect', turns: repeatable }, null, 1));
}
