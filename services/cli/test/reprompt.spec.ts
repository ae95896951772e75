import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { spawn } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { TaskStatus } from '@ratchet/contracts';
import { ErrorCode } from '@ratchet/errors';
import { questionsReply, specReply } from '@ratchet/testing';
import { runGoal, showTask } from '../src/commands';
import { codeReply, failure, planReply, RecordedOutput, scripted, temporaryDirectory, testsReply } from './helpers';

// The reprompter end to end, embedded, with every real service and a
// scripted model: a vague goal gets clarifying questions, answered by a
// person at a real pseudo-terminal (util-linux `script` gives the CLI one),
// or, with no terminal, by the stated assumptions; the spec is stored, shown
// and is what the planner and the tester receive.
jest.setTimeout(300_000);

const todoCode =
  'import json\nimport sys\n\n\ndef main(argv, path="todo.json"):\n    try:\n        with open(path, encoding="utf-8") as handle:\n            items = json.load(handle)\n    except FileNotFoundError:\n        items = []\n    if argv[:1] == ["add"]:\n        items.append(" ".join(argv[1:]))\n        with open(path, "w", encoding="utf-8") as handle:\n            json.dump(items, handle)\n    for number, item in enumerate(items, 1):\n        print(f"{number}. {item}")\n    return 0\n\n\nif __name__ == "__main__":\n    sys.exit(main(sys.argv[1:]))\n';
const todoTests =
  'from todo import main\n\n\ndef test_add_then_list(tmp_path, capsys):\n    path = tmp_path / "todo.json"\n    assert main(["add", "buy", "milk"], str(path)) == 0\n    assert "1. buy milk" in capsys.readouterr().out\n';

/** The turns of a todo task whose reprompter asks two questions first, then writes a spec from the answers. */
function todoTurns(): Parameters<typeof scripted>[0] {
  return [
    {
      role: 'reprompter',
      expect: ['Goal: make a todo app', 'with their answers:\n(none)'],
      reply: questionsReply([
        { question: 'Where are the items kept?', options: ['a JSON file', 'SQLite'], assumption: 'a JSON file in the working directory' },
        { question: 'Command line or web?', options: ['command line', 'web'], assumption: 'a command-line program' },
      ]),
    },
    {
      role: 'reprompter',
      expect: ['Answer: in todo.json'],
      reply: specReply({
        summary: 'A command-line todo list kept in todo.json.',
        interface: ['python todo.py add TEXT', 'python todo.py (lists the items)'],
        acceptanceCriteria: ['add then list prints "1. TEXT"'],
        assumptions: ['a command-line program'],
      }),
    },
    // The planner and the tester receive the spec, not just the goal.
    { role: 'planner', expect: ['add then list prints "1. TEXT"'], reply: planReply('todo.py', 'tests/test_todo.py') },
    { role: 'coder', reply: codeReply('todo.py', todoCode) },
    { role: 'tester', expect: ['add then list prints "1. TEXT"'], reply: testsReply('tests/test_todo.py', todoTests) },
  ];
}

/** What `ratchet run` printed, as a person at a terminal saw it, and how it ended. */
interface TerminalRun {
  readonly status: number | null;
  readonly screen: string;
}

/**
 * Runs the built `ratchet` under a pseudo-terminal (`script -qfec`),
 * typing each reply once the screen shows what it answers, as a person would.
 */
function runAtTerminal(args: readonly string[], env: NodeJS.ProcessEnv, replies: readonly { readonly after: string; readonly type: string }[]): Promise<TerminalRun> {
  const bin = path.resolve(__dirname, '../bin/ratchet.js');
  const command = [process.execPath, bin, ...args].map((word) => `'${word.replace(/'/g, `'\\''`)}'`).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] });
  let screen = '';
  let next = 0;
  // Each reply waits for its own prompt, after the previous reply's.
  let from = 0;
  const onData = (chunk: Buffer) => {
    screen += chunk.toString();
    const reply = replies[next];
    if (reply === undefined) return;
    const found = screen.indexOf(reply.after, from);
    if (found < 0) return;
    from = found + reply.after.length;
    next += 1;
    child.stdin.write(`${reply.type}\r`);
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  return new Promise((resolve) => child.on('close', (status) => resolve({ status, screen })));
}

describe('ratchet run with the reprompter (embedded)', () => {
  let dir: string;
  let remove: () => Promise<void>;

  beforeAll(async () => {
    ({ dir, remove } = await temporaryDirectory());
  });

  afterAll(async () => {
    await remove();
  });

  const shown = async (taskId: string, dataDir: string) => {
    const output = new RecordedOutput();
    await showTask(taskId, { dataDir }, output);
    return output.all;
  };

  it('asks for the goal and the clarifying questions at a terminal, and builds to the spec made from the answers', async () => {
    const script = path.join(dir, 'todo.script.json');
    await writeFile(script, JSON.stringify({ turns: todoTurns() }));
    const dataDir = path.join(dir, 'terminal-data');
    const run = await runAtTerminal(['run', '--interactive', '--out', path.join(dir, 'terminal-out'), '--data-dir', dataDir], { ...process.env, RATCHET_MODEL_SCRIPT: script, NO_COLOR: '1' }, [
      { after: 'What should Ratchet build?', type: 'make a todo app' },
      { after: '[q1] Where are the items kept?', type: 'in todo.json' },
      // Enter keeps the stated assumption.
      { after: '[q2] Command line or web?', type: '' },
    ]);
    if (run.status !== 0) throw new Error(`ratchet run exited ${run.status}:\n${run.screen}`);
    expect(run.screen).toContain('Enter keeps the assumption: a command-line program');
    expect(run.screen).toMatch(/SUCCEEDED after 1 iteration/);
    const taskId = /task ([0-9a-f-]{36})/.exec(run.screen)?.[1] ?? /ratchet answer ([0-9a-f-]{36})/.exec(run.screen)?.[1];
    expect(taskId).toBeDefined();
    const text = await shown(taskId!, dataDir);
    expect(text).toContain('goal: make a todo app');
    expect(text).toMatch(/question q1: Where are the items kept\? -> in todo\.json \(local\)/);
    expect(text).toMatch(/question q2: Command line or web\? -> assumed: a command-line program/);
    expect(text).toContain('spec: A command-line todo list kept in todo.json.');
    expect(text).toContain('    - add then list prints "1. TEXT"');
  });

  it('without a terminal, goes on with the stated assumptions instead of waiting', async () => {
    const turns = todoTurns();
    // No answers arrive, so the second reprompt sees only assumptions.
    turns[1] = { ...turns[1]!, expect: ['No answer: use your assumption (a JSON file in the working directory)'] };
    const { models } = scripted(turns);
    const output = new RecordedOutput();
    const result = await runGoal('make a todo app', { lang: 'python', out: path.join(dir, 'assumed-out'), dataDir: path.join(dir, 'data'), models, reprompt: true }, output);
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    expect(output.all).toContain('no terminal to ask at: going on with the stated assumptions (q1: a JSON file in the working directory; q2: a command-line program)');
    expect(await shown(result.task.id, path.join(dir, 'data'))).toMatch(/question q1: Where are the items kept\? -> assumed: a JSON file in the working directory/);
  });

  it('with --no-questions, takes the spec with its assumptions at once', async () => {
    const { models, model } = scripted([
      { role: 'reprompter', reply: specReply({ summary: 'A todo list in JSON.', acceptanceCriteria: ['add then list prints "1. TEXT"'], assumptions: ['a command-line program', 'items kept in todo.json'] }) },
      ...todoTurns().slice(2),
    ]);
    const result = await runGoal('make a todo app', { lang: 'python', out: path.join(dir, 'no-questions-out'), dataDir: path.join(dir, 'data'), models, reprompt: true, questions: false }, new RecordedOutput());
    expect(result.task.status).toBe(TaskStatus.TASK_STATUS_SUCCEEDED);
    expect(result.task.questions).toEqual([]);
    expect(model.calls[0]?.request.role).toBe('reprompter');
    const text = await shown(result.task.id, path.join(dir, 'data'));
    expect(text).toContain('optional phases: reprompt (states assumptions)');
    expect(text).toContain('    - items kept in todo.json');
  });

  it('refuses an unknown profile before anything runs, naming the known ones', async () => {
    const { models } = scripted([]);
    const refused = await failure(runGoal('make a todo app', { lang: 'python', out: path.join(dir, 'unknown-out'), dataDir: path.join(dir, 'data'), models, profile: 'webapp' }, new RecordedOutput()));
    expect(refused).toMatchObject({ code: ErrorCode.INVALID_ARGUMENT, message: expect.stringContaining('unknown profile "webapp"; known: cli_tool, data_pipeline, library, web_app') });
  });
});
