import { TaskStatus } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { Command, CommanderError } from 'commander';
import { consoleOutput, runGoal, showHistory, showTask } from './commands';
import { runDemo } from './demo';

/** sysexits EX_CONFIG, as the services use: the configuration needs fixing. */
const exitConfig = 78;

function program(): Command {
  const command = new Command('ratchet')
    .description('Ratchet: a self-improving coding agent. Plans, writes code, tests it in a sandbox, reflects on failures and learns from them.')
    .showHelpAfterError()
    .exitOverride();

  command
    .command('run')
    .description('turn a goal into tested code (embedded mode: every service in this process)')
    .argument('<goal...>', 'what the code should do, e.g. "a CLI that manages TODO items in JSON"')
    .option('--lang <language>', 'python, typescript or javascript', 'python')
    .option('--tests <dir>', 'your acceptance tests (never edited by the model), placed under tests/')
    .option('--out <dir>', 'where the final files are written', 'ratchet-output')
    .option('--force', 'write into a non-empty --out directory')
    .option('--max-iterations <n>', 'stop after this many attempts (default 10, from config)')
    .option('--json', 'print events as JSON lines on stdout instead of progress')
    .option('--data-dir <dir>', 'where history and lessons are kept (default ~/.ratchet/data)')
    .action(async (goalWords: string[], options: { lang: string; tests?: string; out: string; force?: boolean; maxIterations?: string; json?: boolean; dataDir?: string }) => {
      const result = await runGoal(goalWords.join(' '), options);
      process.exitCode = result.task.status === TaskStatus.TASK_STATUS_SUCCEEDED ? 0 : 1;
    });

  command
    .command('history')
    .description('list recent tasks, newest first')
    .option('--limit <n>', 'how many', '20')
    .option('--status <status>', 'only tasks in this status, e.g. succeeded or failed')
    .option('--json', 'one JSON object per line')
    .option('--data-dir <dir>', 'where history is kept (default ~/.ratchet/data)')
    .action(async (options: { limit?: string; status?: string; json?: boolean; dataDir?: string }) => showHistory(options));

  command
    .command('show')
    .description("a task's iterations, errors, reflections and the lessons it used")
    .argument('<task-id>', 'the id, or its first 8+ characters from `ratchet history`')
    .option('--json', 'one JSON object')
    .option('--data-dir <dir>', 'where history is kept (default ~/.ratchet/data)')
    .action(async (taskId: string, options: { json?: boolean; dataDir?: string }) => showTask(taskId, options));

  command
    .command('demo')
    .description('offline demo with a scripted model: a task fails, is fixed and leaves a lesson; a similar task reuses it')
    .option('--dir <dir>', 'keep the demo data and files here (default: a temporary directory)')
    .action(async (options: { dir?: string }) => {
      process.exitCode = (await runDemo(options)) ? 0 : 1;
    });
  return command;
}

async function main(argv: readonly string[]): Promise<void> {
  try {
    await program().parseAsync([...argv]);
  } catch (error) {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode;
      return;
    }
    const appError = AppError.from(error);
    consoleOutput.err(`ratchet: ${appError.message}`);
    process.exitCode = appError.code === ErrorCode.CONFIG_INVALID ? exitConfig : 1;
  }
}

void main(process.argv);
