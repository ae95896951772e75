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
  const turns = goals.flatMap(({ goal, tag, failFirst, slowSeconds, dependencies }) => {
    // The goal line of the prompt, not the bare tag: retrieved lessons quote other tasks' goals.
    const own = `Goal: ${goal}\n`;
    const module = `adder_${tag.replace(/\W/g, '_').replace(/^_+|_+$/g, '')}`;
    const code = `${module}.py`;
    const test = `tests/test_${module}.py`;
    const sleep = slowSeconds === undefined ? '' : `import time\ntime.sleep(${slowSeconds})\n`;
    const good = codeReply(code, 'def add(a, b):\n    return a + b\n');
    return [
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
