import { workspacePathProblem } from '@ratchet/agent';
import { AppError, ErrorCode } from '@ratchet/errors';
import { commandsOfArgv, parseCommandLine } from './command-parse';
import { decideCommands, problemCheck, type CommandCheck, type CommandPolicy } from './command-policy';
import type { Parsers } from './syntax';

/** What CheckCommand is asked about. */
export interface CommandRequest {
  /** Shell text as the model wrote it; when not empty, `argv` is ignored. */
  readonly commandLine: string;
  /** A program and its arguments run without a shell, when there is no command line. */
  readonly argv: readonly string[];
  /** Where it runs, relative to the work directory; '' or '.' for the work directory itself. */
  readonly workingDirectory: string;
}

/**
 * Checks a command line (or an argv) against the command policy: parses it
 * with the shell grammar, finds every command in it, and decides. A command
 * line that does not parse is denied with a `cmd.parse-error` finding, not
 * refused, so the model learns what to fix.
 *
 * @throws AppError INVALID_ARGUMENT when there is no command (both empty, or
 *   a blank command line), when it is longer than
 *   `policy.maxCommandLineChars`, or when the working directory is not a
 *   relative path inside the work directory.
 */
export function checkCommand(parsers: Parsers, policy: CommandPolicy, request: CommandRequest): CommandCheck {
  const workingDirectory = checkWorkingDirectory(request.workingDirectory);
  const options = { maxNestingDepth: policy.maxNestingDepth };
  if (request.commandLine !== '') {
    if (request.commandLine.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'command_line is blank: send the shell command to check');
    checkLength(request.commandLine.length, policy);
    const parsed = parseCommandLine(parsers, request.commandLine, options);
    return parsed.ok ? decideCommands(parsed.commands, policy, workingDirectory) : problemCheck(parsed.problem, request.commandLine);
  }
  if (request.argv.length === 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'no command to check: set command_line (shell text) or argv (a program and its arguments)');
  if (request.argv[0] === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'argv[0] is empty: it must name the program to run');
  checkLength(request.argv.reduce((total, word) => total + word.length + 1, -1), policy);
  const parsed = commandsOfArgv(parsers, request.argv, options);
  return parsed.ok ? decideCommands(parsed.commands, policy, workingDirectory) : problemCheck(parsed.problem, request.argv.join(' '));
}

function checkLength(length: number, policy: CommandPolicy): void {
  if (length <= policy.maxCommandLineChars) return;
  throw new AppError(
    ErrorCode.INVALID_ARGUMENT,
    `the command is ${length} characters; CheckCommand takes at most ${policy.maxCommandLineChars} (commands.maxCommandLineChars in config/safety.yaml, or RATCHET_COMMANDS_MAX_COMMAND_LINE_CHARS): write a long script to a file in the work directory and run the file`,
  );
}

/** The working directory as a relative path ('' for the work directory itself). */
function checkWorkingDirectory(workingDirectory: string): string {
  const trimmed = workingDirectory.replace(/\/+$/, '');
  if (trimmed === '' || trimmed === '.') return '';
  const cleaned = trimmed.startsWith('./') ? trimmed.slice(2) : trimmed;
  const problem = workspacePathProblem(cleaned);
  if (problem !== undefined) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `working_directory ${JSON.stringify(workingDirectory)} ${problem}: send a path relative to the work directory, e.g. "src", or "" for the work directory itself`);
  }
  return cleaned;
}
