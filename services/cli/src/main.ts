import { TaskStatus } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { roleNames } from '@ratchet/grpc-api';
import { withSpan } from '@ratchet/telemetry';
import { Command, CommanderError } from 'commander';
import type { BenchOptions } from './bench/run-bench';
import { answerQuestions, approveGate, cancelTask, listProfiles, consoleOutput, resumeTask, runGoal, showHistory, showTask, watchTask, type RunResult } from './commands';
import type { exportLessons, forgetLesson, importLessons, listLessons, reindexLessons, showLesson } from './lessons-command';
import type { SandboxRunOptions } from './sandbox-command';
import { addUiCommand } from './ui-command';
import type { AnswerOptions } from './questions';

// The modules of the less common commands load when one of them runs, not
// on every start: `ratchet run` or `ratchet history` never needs the bench
// runner, the demo or the sandbox command, and every command's start paid
// for them (a third of `ratchet --help`'s 0.9 s of CPU was loading modules
// it never used).
const bench = () => require('./bench/run-bench') as typeof import('./bench/run-bench');
const demo = () => require('./demo') as typeof import('./demo');
const lessonCommands = () => require('./lessons-command') as typeof import('./lessons-command');
const sandbox = () => require('./sandbox-command') as typeof import('./sandbox-command');
const token = () => require('./token-command') as typeof import('./token-command');

/** sysexits EX_CONFIG, as the services use: the configuration needs fixing. */
const exitConfig = 78;

/** 0 when the task succeeded, 130 when the user detached from it, 1 otherwise. */
function exitCodeOf(result: RunResult): number {
  return result.detached ? 130 : result.task.status === TaskStatus.TASK_STATUS_SUCCEEDED ? 0 : 1;
}

function program(): Command {
  const command = new Command('ratchet')
    .description('Ratchet: a self-improving coding agent. Plans, writes code, tests it in a sandbox, reflects on failures and learns from them.')
    .showHelpAfterError()
    .exitOverride();

  // Every command but demo talks to a server when one is named, else works embedded.
  const remote = (sub: Command) =>
    sub
      .option('--server <host:port>', "an orchestrator's gRPC address (env RATCHET_SERVER); without it, embedded mode")
      .option('--token <token>', 'bearer token for the server (env RATCHET_TOKEN)')
      .option('--tls', 'connect with TLS, verifying the server with the system CAs (env RATCHET_SERVER_TLS=1)')
      .option('--tls-ca <file>', 'connect with TLS, verifying the server with this CA (env RATCHET_SERVER_CA_FILE)');
  const dataDir = (sub: Command) => sub.option('--data-dir <dir>', 'embedded mode: where history and lessons are kept (default ~/.ratchet/data)');

  remote(
    dataDir(
      command
        .command('run')
        .description('turn a goal into tested code (embedded: every service in this process; with --server: on that server, and Ctrl-C detaches)')
        .argument('[goal...]', 'what the code should do, e.g. "a CLI that manages TODO items in JSON"; without it, asked at the terminal (as with --interactive)')
        .option('--lang <language>', 'python, typescript or javascript', 'python')
        .option('--tests <dir>', 'your acceptance tests (never edited by the model), placed under tests/')
        .option('--out <dir>', 'where the final files are written (default ratchet-output; with --workspace, the patch and report go to <data-dir>/tasks/<task-id>)')
        .option('--force', 'write into a non-empty --out directory')
        .option('--max-iterations <n>', 'stop after this many attempts (default 10, from config)')
        .option('--require-approval', 'with --server: a person approves the passing result (ratchet approve) before the task succeeds')
        .option('--workspace <dir>', 'work on this existing project (a directory or git repository); the result is a patch written to --out')
        .option('--apply', 'with --workspace: apply the patch to the directory when the task succeeds (refused if it changed meanwhile)')
        .option('--branch <name>', 'with --workspace in a git repository: commit the patch to this new branch (the working tree is left alone)')
        .option('--yes', 'embedded: run commands the command policy would ask about (package installs) without asking')
        .option('--allow-deps', 'embedded: install the packages the plan needs that config/dependencies.yaml would ask about, without asking (denied ones stay denied); without it they are asked about at the terminal, or refused when there is none')
        .option('--test-command <command>', 'with --workspace: how the project runs its tests, a shell command run from its root in the sandbox (e.g. "npm test"); passes on exit 0 and on a JUnit report written to $RATCHET_TEST_REPORT')
        .option('--setup-command <command>', 'with --workspace: a shell command run once in the sandbox before coding, from the project\'s root (e.g. "pip install -e ."), with only the configured package registries reachable; every test run and the coder start from its result, and files it creates stay out of the patch (overrides `setup:` in the workspace\'s .ratchet.yaml)')
        .option('--test-edits <when>', "with --workspace: whether the model may edit the project's tests: goal (when the goal asks to change them), allow or protect", 'goal')
        .option('--project <key>', "whose lessons the task uses and adds to, with the global ones (default: the workspace's git remote, else its directory name; none for a goal without --workspace)")
        .option('-p, --profile <name>', 'the kind of project: web_app, cli_tool, data_pipeline, library, or one of config/profiles/*.yaml (`ratchet profiles` lists them): its layout, test style, packages and prompt additions')
        .option('--reprompt', 'turn the goal into a structured spec first (behaviour, interface, edge cases, acceptance criteria), asking clarifying questions when it is ambiguous')
        .option('--interactive', 'ask for the goal (when none is given) and answer the reprompter\'s questions at the terminal; implies --reprompt')
        .option('--no-questions', 'the reprompter states its assumptions in the spec instead of asking')
        .option('--enable-review', 'a reviewer role reads each change before the tests run; blocking findings fail the attempt')
        .option('--enable-audit', 'a security auditor role reads each change (OWASP Top 10, CWE) with the static scanners\' findings; high-severity findings fail the attempt')
        .option('--label <key=value>', 'a label on the task, e.g. team=payments (repeatable; at most 32, keys as Kubernetes label keys, values up to 256 characters)', (value: string, previous: string[] = []) => [...previous, value])
        .option('--json', 'print events as JSON lines on stdout instead of progress'),
    ),
  ).action(async (goalWords: string[], options: Parameters<typeof runGoal>[1]) => {
    process.exitCode = exitCodeOf(await runGoal(goalWords.join(' '), options));
  });

  remote(
    dataDir(
      command
        .command('watch')
        .description("a task's progress from its start, then live until it ends; exits 0 when it succeeded")
        .argument('<task-id>', 'the id, or its first 8+ characters from `ratchet history`')
        .option('--out <dir>', 'write the files of the succeeded task here')
        .option('--force', 'write into a non-empty --out directory')
        .option('--json', 'print events as JSON lines on stdout'),
    ),
  ).action(async (taskId: string, options: Parameters<typeof watchTask>[1]) => {
    process.exitCode = exitCodeOf(await watchTask(taskId, options));
  });

  remote(
    command
      .command('cancel')
      .description('stop a task running on a server; it ends CANCELLED')
      .argument('<task-id>', 'the id, or its first 8+ characters')
      .option('--reason <text>', 'recorded as the status reason')
      .option('--json', 'one JSON object'),
  ).action(async (taskId: string, options: Parameters<typeof cancelTask>[1]) => {
    await cancelTask(taskId, options);
  });

  remote(
    dataDir(
      command
        .command('resume')
        .description('continue a FAILED task from its last iteration with more budget, and follow it like run')
        .argument('<task-id>', 'the id, or its first 8+ characters')
        .option('--hint <text>', 'guidance for the new plan, e.g. "store items in SQLite instead"')
        .option('--add-iterations <n>', 'more attempts on top of its budget (needed when it stopped at its maximum)')
        .option('--out <dir>', 'write the files here when it succeeds')
        .option('--force', 'write into a non-empty --out directory')
        .option('--json', 'print events as JSON lines on stdout'),
    ),
  ).action(async (taskId: string, options: Parameters<typeof resumeTask>[1]) => {
    process.exitCode = exitCodeOf(await resumeTask(taskId, options));
  });

  remote(
    command
      .command('answer')
      .description("answer the reprompter's clarifying questions of a task on a server (it waits in AWAITING_ANSWER); at a terminal, each open question is asked")
      .argument('<task-id>', 'the id, or its first 8+ characters')
      .option('--answer <id=text...>', 'answer a question by its id, e.g. --answer q1="store them in JSON" (q1= keeps its stated assumption)')
      .option('--assume', 'take the stated assumption of every open question'),
  ).action(async (taskId: string, options: AnswerOptions) => {
    await answerQuestions(taskId, options);
  });

  remote(dataDir(command.command('profiles').description('the project profiles `ratchet run -p NAME` takes (config/profiles/*.yaml)').option('--json', 'one JSON object per line'))).action(
    async (options: Parameters<typeof listProfiles>[0]) => {
      await listProfiles(options);
    },
  );

  remote(
    command
      .command('approve')
      .description('approve (or --reject) a pending approval gate of a task on a server')
      .argument('<task-id>', 'the id')
      .argument('<gate-id>', 'the gate, from the ApprovalRequested event')
      .option('--reject', 'reject instead of approve')
      .option('--comment <text>', 'recorded with the decision'),
  ).action(async (taskId: string, gateId: string, options: Parameters<typeof approveGate>[2]) => {
    await approveGate(taskId, gateId, options);
  });

  remote(
    dataDir(
      command
        .command('history')
        .description('list recent tasks, newest first')
        .option('--limit <n>', 'how many', '20')
        .option('--status <status>', 'only tasks in this status, e.g. succeeded or failed')
        .option('--json', 'one JSON object per line'),
    ),
  ).action(async (options: Parameters<typeof showHistory>[0]) => showHistory(options));

  remote(
    dataDir(
      command
        .command('show')
        .description("a task's iterations, errors, reflections and the lessons it used")
        .argument('<task-id>', 'the id, or its first 8+ characters from `ratchet history`')
        .option('--json', 'one JSON object'),
    ),
  ).action(async (taskId: string, options: Parameters<typeof showTask>[1]) => showTask(taskId, options));

  remote(
    dataDir(
      command
        .command('bench')
        .description(
          'run a suite of tasks with the configured model and report pass@1, iterations, model calls, tokens and cost by role, time and lessons; rerun the same command to go on after a stop. Exits 0 when the run completed (whatever passed), 65 when some tasks had input errors',
        )
        .argument('<suite>', 'a JSONL file with task_id, prompt, test and entry_point on each line (HumanEval files work as they are), or a directory of task folders, each with a task.yaml (goal, test_command, language, max_iterations, hidden_tests, fail_to_pass, pass_to_pass, source) and its files')
        .option('--limit <n>', 'only the first N tasks of the suite')
        .option('--concurrency <n>', 'tasks in flight at once (default 1)')
        .option('--max-iterations <n>', "attempts per task (default: the task's max_iterations, else orchestrator.maxIterations)")
        .option('--memory <mode>', 'fresh: a memory that starts empty (default); shared: your global lessons, keeping what it learns in project bench/<suite>; off: no lessons')
        .option('--repeat <n>', 'run the suite N times (default 1)')
        .option('--compare-memory', 'run the suite with memory off, then twice over one empty memory (cold, warm), and report what learning changed')
        .option('--out <dir>', 'the run directory: results.jsonl, report.md, and embedded data (default .ratchet-bench/<suite name>)')
        .option('--sources <dir>', 'git clones of the projects that tasks with a source (bench/swe) are taken from, as <owner>+<name> (default $RATCHET_BENCH_SOURCES)')
        .option('--oracle <kind>', "instead of the configured model, a scripted one that proves the harness: fix writes each task's upstream fix through the coder's tools, none changes nothing that matters")
        .option('--verify', "run no task: check that each task's hidden tests fail on its snapshot and pass with its upstream fix (exit 1 when one does not)")
        .option('--json', 'print the report and every result as one JSON object on stdout'),
    ),
  ).action(async (suite: string, options: BenchOptions) => {
    process.exitCode = (await bench().runBench(suite, options)).exitCode;
  });

  const lessons = command.command('lessons').description('what Ratchet has learnt: lessons from failures and fixes, and what worked, with why each ranks where it does');
  remote(
    dataDir(
      lessons
        .command('list')
        .description('stored lessons, newest first: status, weight, uses, scope and title')
        .option('--scope <project>', 'only this project\'s lessons ("global" for the shared ones)')
        .option('--status <status>', 'only candidate, promoted, demoted or retired lessons')
        .option('--lang <language>', 'only lessons for python, typescript or javascript (and those for any language)')
        .option('--limit <n>', 'how many', '50')
        .option('--json', 'one JSON object per line'),
    ),
  ).action(async (options: Parameters<typeof listLessons>[0]) => lessonCommands().listLessons(options));
  remote(
    dataDir(lessons.command('show').description('a lesson: why it ranks where it does, its statistics and evidence').argument('<lesson-id>', 'the id, or its first 8+ characters').option('--json', 'one JSON object')),
  ).action(async (lessonId: string, options: Parameters<typeof showLesson>[1]) => lessonCommands().showLesson(lessonId, options));
  remote(dataDir(lessons.command('forget').description('delete a lesson, its evidence and its vector').argument('<lesson-id>', 'the id, or its first 8+ characters'))).action(
    async (lessonId: string, options: Parameters<typeof forgetLesson>[1]) => lessonCommands().forgetLesson(lessonId, options),
  );
  remote(
    dataDir(
      lessons
        .command('export')
        .description('write lessons (all, or one scope\'s) to a JSON file another installation can import')
        .argument('<file>', 'where to write')
        .option('--scope <project>', 'only this project\'s lessons')
        .option('--force', 'replace the file if it exists'),
    ),
  ).action(async (file: string, options: Parameters<typeof exportLessons>[1]) => lessonCommands().exportLessons(file, options));
  remote(
    dataDir(
      lessons
        .command('import')
        .description('store the lessons of an export (ids already stored are skipped), embedded with this installation\'s embedder')
        .argument('<file>', 'a file from ratchet lessons export')
        .option('--scope <project>', 'store them all in this scope instead of their own'),
    ),
  ).action(async (file: string, options: Parameters<typeof importLessons>[1]) => lessonCommands().importLessons(file, options));
  remote(dataDir(lessons.command('reindex').description('embed every lesson with the configured embedder (after changing it); retrieval skips lessons not yet embedded with it'))).action(
    async (options: Parameters<typeof reindexLessons>[0]) => lessonCommands().reindexLessons(options),
  );

  command
    .command('sandbox')
    .description('the sandbox generated code runs in')
    .command('run')
    .description('run the files of a directory with a command in the sandbox and print the result (exit code, flags, test report); without a command, run its tests')
    .argument('<dir>', 'the files to put in the work directory')
    .argument('[command...]', 'after --: the program and its arguments, e.g. -- python3 -m pytest -q')
    .option('--driver <driver>', 'docker or bwrap (default: sandbox.driver from config)')
    .option('--lang <language>', 'python, typescript or javascript: which tests to run without a command', 'python')
    .option('--timeout <seconds>', 'wall-clock limit of the run (default: sandbox.timeoutSeconds)')
    .option('--report <path>', 'where the command writes a JUnit report to read back (default with no command: the tester\'s)')
    .option('--json', 'one JSON object: exit code, flags, stdout, stderr, test report')
    .action(async (directory: string, words: string[], options: SandboxRunOptions) => {
      process.exitCode = (await sandbox().runInSandbox(directory, words, options)) ? 0 : 1;
    });

  command
    .command('token')
    .description('make a new bearer token for a user of a server: prints the token (give it to the user, for RATCHET_TOKEN) and the entry for the server\'s users file, which keeps only its hash')
    .option('--name <name>', 'who the token is for', 'alice@example.com')
    .option('--team <team>', 'the team it acts for', 'default')
    .option('--roles <roles>', `comma-separated, any of ${roleNames.join(', ')}`, 'submitter,approver')
    .action((options: { name: string; team: string; roles: string }) => token().printNewToken(options));

  command
    .command('demo')
    .description('offline demo with a scripted model: a task fails, is fixed and leaves a lesson; a similar task reuses it; then a failing test in an existing project is fixed through the tools, as a patch')
    .option('--dir <dir>', 'keep the demo data and files here (default: a temporary directory)')
    .action(async (options: { dir?: string }) => {
      process.exitCode = (await demo().runDemo(options)) ? 0 : 1;
    });
  addUiCommand(command);
  return command;
}

/** `run`, `lessons list`, ...: the words that name a command, below `ratchet`. */
function commandPath(command: Command): string {
  const names: string[] = [];
  for (let current: Command | null = command; current?.parent; current = current.parent) names.unshift(current.name());
  return names.join(' ');
}

async function main(argv: readonly string[]): Promise<void> {
  try {
    // The root of the trace of whatever the command does: with a server, the task's phases in every service are its descendants.
    await withSpan('ratchet', {}, async (span) => {
      const command = program().hook('preAction', (_root, action) => {
        const name = commandPath(action);
        span.updateName(`ratchet ${name}`);
        span.setAttribute('ratchet.command', name);
      });
      try {
        await command.parseAsync([...argv]);
      } catch (error) {
        // Help, a version or a usage error: what the user asked for, or told on stderr; not a failure of the command's work.
        if (!(error instanceof CommanderError)) throw error;
        process.exitCode = error.exitCode;
      }
    });
  } catch (error) {
    const appError = AppError.from(error);
    consoleOutput.err(`ratchet: ${appError.message}`);
    process.exitCode = appError.code === ErrorCode.CONFIG_INVALID ? exitConfig : 1;
  }
}

// `ratchet history --json | head -1` closes the pipe early: that is the reader's choice, not an error.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
  throw error;
});

void main(process.argv);
