import { AppError, ErrorCode } from '@ratchet/errors';
import type { BenchTask } from './task';
import type { PythonSyntax } from './python-syntax';

// HumanEval/MBPP-style suites: one JSON object per line with task_id, prompt,
// test and entry_point. The goal asks for solution.py; the line's test code
// becomes a pytest file that imports entry_point from it.

/** One line of a JSONL suite, checked. */
export interface JsonlRecord {
  /** 1-based line number in the file. */
  readonly line: number;
  readonly taskId: string;
  readonly prompt: string;
  readonly test: string;
  readonly entryPoint: string;
}

const requiredKeys = ['task_id', 'prompt', 'test', 'entry_point'] as const;
/** Problems listed in one error; past this the error says how many more. */
const maxListedProblems = 20;

/** The module the goal asks for and the acceptance test imports. */
export const solutionModule = 'solution';

/**
 * Parses a JSONL suite. Blank lines are skipped; other keys on a line
 * (canonical_solution, ...) are ignored. `task_id` may be a string or a
 * number (MBPP's are numbers).
 *
 * @param file the name to put in messages, e.g. `sample.jsonl`.
 * @throws AppError INVALID_ARGUMENT listing every bad line as `FILE:LINE: problem`
 *   (not JSON, not an object, missing keys, wrong types, an entry_point that is
 *   not a Python name, a repeated task_id), or when the file has no tasks.
 */
export function parseJsonlSuite(text: string, file: string): JsonlRecord[] {
  const records: JsonlRecord[] = [];
  const problems: string[] = [];
  const lineOfId = new Map<string, number>();
  text
    .replace(/^\uFEFF/, '')
    .split(/\r?\n/)
    .forEach((raw, index) => {
      const line = index + 1;
      if (raw.trim() === '') return;
      const at = `${file}:${line}`;
      let value: unknown;
      try {
        value = JSON.parse(raw);
      } catch (error) {
        problems.push(`${at}: not valid JSON (${error instanceof Error ? error.message : String(error)})`);
        return;
      }
      if (typeof value !== 'object' || value === null || Array.isArray(value)) {
        problems.push(`${at}: expected a JSON object with ${requiredKeys.join(', ')}, got ${Array.isArray(value) ? 'an array' : JSON.stringify(value)}`);
        return;
      }
      const object = value as Record<string, unknown>;
      const missing = requiredKeys.filter((key) => object[key] === undefined || object[key] === null);
      if (missing.length > 0) {
        problems.push(`${at}: missing ${missing.join(', ')} (every line needs ${requiredKeys.join(', ')})`);
        return;
      }
      const taskId = typeof object['task_id'] === 'number' ? String(object['task_id']) : object['task_id'];
      const wrong = [
        typeof taskId !== 'string' || taskId.trim() === '' ? 'task_id must be a non-empty string or a number' : '',
        typeof object['prompt'] !== 'string' || object['prompt'].trim() === '' ? 'prompt must be a non-empty string' : '',
        typeof object['test'] !== 'string' || object['test'].trim() === '' ? 'test must be a non-empty string' : '',
        typeof object['entry_point'] !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(object['entry_point'])
          ? `entry_point must name a Python function, e.g. "add" (got ${JSON.stringify(object['entry_point'])})`
          : '',
      ].filter((problem) => problem !== '');
      if (wrong.length > 0) {
        problems.push(`${at}: ${wrong.join('; ')}`);
        return;
      }
      const id = (taskId as string).trim();
      const earlier = lineOfId.get(id);
      if (earlier !== undefined) {
        problems.push(`${at}: task_id ${JSON.stringify(id)} is also on line ${earlier}; task ids must be unique`);
        return;
      }
      lineOfId.set(id, line);
      records.push({ line, taskId: id, prompt: object['prompt'] as string, test: object['test'] as string, entryPoint: object['entry_point'] as string });
    });
  if (problems.length > 0) {
    const listed = problems.slice(0, maxListedProblems);
    const more = problems.length - listed.length;
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `${file} has ${problems.length} bad line(s):\n  ${listed.join('\n  ')}${more > 0 ? `\n  ... and ${more} more` : ''}`);
  }
  if (records.length === 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${file} has no tasks: expected one JSON object per line with ${requiredKeys.join(', ')}`);
  return records;
}

/**
 * The task a JSONL line describes: the goal asks for solution.py defining
 * the entry point; the acceptance test is `tests/test_<id>.py`, which
 * imports the entry point from solution and runs the line's test code (a
 * HumanEval `check(candidate)` is called with it; `test_*` functions run as
 * they are; plain statements run when pytest imports the file). A test that
 * is not valid Python makes the task an input error, named in the report.
 *
 * @param testName the file and function name stem, unique in the suite (see `testNames`).
 */
export function jsonlTask(record: JsonlRecord, testName: string, file: string, syntax: PythonSyntax): BenchTask {
  const goal = [
    `Write ${solutionModule}.py, a Python module that defines the function \`${record.entryPoint}\` described below; where the description is the start of the code, complete it and keep its names and signature.`,
    `The acceptance tests import it with \`from ${solutionModule} import ${record.entryPoint}\`.`,
    '',
    record.prompt.trimEnd(),
  ].join('\n');
  const base = { id: record.taskId, goal, language: 'python' as const, workspace: [], testCommand: [] };
  const problem = syntax.problem(record.test);
  if (problem !== undefined) {
    return { ...base, acceptanceTests: [], inputError: `its test (${file} line ${record.line}) is not valid Python: ${problem}` };
  }
  const functions = syntax.topLevelFunctions(record.test);
  const testFunction = `test_${testName}`;
  const runner = functions.includes('check')
    ? functions.includes(testFunction)
      ? []
      : ['', '', `def ${testFunction}():`, `    check(${record.entryPoint})`]
    : functions.some((name) => name.startsWith('test'))
      ? []
      : ['', '', `def ${testFunction}():`, '    """The statements above ran when pytest imported this file."""'];
  const content = [`# Acceptance test of task ${record.taskId} (${file}, line ${record.line}).`, `from ${solutionModule} import ${record.entryPoint}`, '', '', record.test.trimEnd(), ...runner, ''].join('\n');
  return { ...base, acceptanceTests: [{ path: `tests/test_${testName}.py`, content }] };
}

/**
 * A Python-safe, unique name stem per task id: `HumanEval/0` -> `humaneval_0`;
 * ids that map to the same stem get `_2`, `_3`, ...
 */
export function testNames(taskIds: readonly string[]): string[] {
  const used = new Set<string>();
  return taskIds.map((id) => {
    const stem = id.toLowerCase().replace(/[^a-z0-9]+/g, '_').replace(/^_+|_+$/g, '') || 'task';
    let name = stem;
    for (let suffix = 2; used.has(name); suffix += 1) name = `${stem}_${suffix}`;
    used.add(name);
    return name;
  });
}
