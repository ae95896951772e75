import { writeFile } from 'node:fs/promises';
import { codeReply, planReply, reflectionReply, testsReply } from './helpers';

/** A goal the distributed tests submit, with a tag only its own turns expect. */
export interface ScriptedGoal {
  readonly goal: string;
  readonly tag: string;
  /** The first attempt fails a test; the reflector explains; the second passes. */
  readonly failFirst?: boolean;
  /** Tests that sleep this long, for a task to still be running when acted on. */
  readonly slowSeconds?: number;
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
export async function writeScript(file: string, goals: readonly ScriptedGoal[]): Promise<void> {
  const turns = goals.flatMap(({ tag, failFirst, slowSeconds }) => {
    const module = `adder_${tag.replace(/\W/g, '_').replace(/^_+|_+$/g, '')}`;
    const code = `${module}.py`;
    const test = `tests/test_${module}.py`;
    const sleep = slowSeconds === undefined ? '' : `import time\ntime.sleep(${slowSeconds})\n`;
    const good = codeReply(code, 'def add(a, b):\n    return a + b\n');
    return [
      { role: 'planner', expect: [tag], reply: planReply(code, test) },
      ...(failFirst
        ? [
            { role: 'coder', expect: [tag, '(first attempt)'], reply: codeReply(code, 'def add(a, b):\n    return a - b\n') },
            { role: 'reflector', expect: [tag], reply: reflectionReply('add subtracts instead of adding') },
          ]
        : []),
      { role: 'coder', expect: [tag], reply: good },
      { role: 'tester', expect: [tag], reply: testsReply(test, `${sleep}from ${module} import add\n\ndef test_add():\n    assert add(2, 3) == 5\n\ndef test_negative():\n    assert add(-1, 1) == 0\n`) },
    ];
  });
  await writeFile(file, JSON.stringify({ order: 'by-expect', turns }, null, 1));
}
