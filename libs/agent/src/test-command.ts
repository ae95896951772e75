/** Most arguments a test command may have, and its longest total length in characters. */
export const maxTestCommandArgs = 100;
export const maxTestCommandChars = 8_192;

/**
 * Why `argv` cannot be a test command, or undefined when it can: a program
 * and its arguments, the program named, no NUL characters, within the size
 * limits.
 */
export function testCommandProblem(argv: readonly string[]): string | undefined {
  if (argv.length === 0) return undefined;
  if ((argv[0] ?? '').trim() === '') return 'names no program: its first element is empty';
  if (argv.length > maxTestCommandArgs) return `has ${argv.length} arguments; at most ${maxTestCommandArgs}`;
  const chars = argv.reduce((sum, arg) => sum + arg.length, 0);
  if (chars > maxTestCommandChars) return `is ${chars} characters long; at most ${maxTestCommandChars}`;
  if (argv.some((arg) => arg.includes('\0'))) return 'contains a NUL character';
  return undefined;
}

/**
 * A test command as a person types it: the line of `sh -c LINE` (how a
 * project's own command is given), else the arguments joined by spaces.
 */
export function testCommandLine(argv: readonly string[]): string {
  return argv.length === 3 && argv[0] === 'sh' && argv[1] === '-c' ? (argv[2] ?? '') : argv.join(' ');
}

/**
 * A project's own test command with a JUnit report added where Ratchet can
 * add one itself, so its counts are real: a plain pytest run (`pytest ...`,
 * `python -m pytest ...`, `python3 -m pytest ...`, one command without
 * pipes, lists or redirections, not already writing one) gets
 * `--junitxml="$<reportVariable>"`, and `--continue-on-collection-errors`:
 * one test module that cannot be imported (an optional package missing, a
 * pre-existing failure) must not stop every other test from running and
 * being counted. Anything else is returned as it is.
 */
export function withJunitReport(argv: readonly string[], reportVariable: string): string[] {
  const line = testCommandLine(argv);
  const shell = argv.length === 3 && argv[0] === 'sh' && argv[1] === '-c';
  const pytest = /^\s*(?:(?:python3?|py) -m )?pytest(?:\s|$)/.test(line);
  if (!shell || !pytest || /[|;&<>`$()]/.test(line) || /--junit-?xml/.test(line)) return [...argv];
  const keepGoing = /--continue-on-collection-errors/.test(line) ? '' : ' --continue-on-collection-errors';
  return ['sh', '-c', `${line.trimEnd()}${keepGoing} --junitxml="$${reportVariable}"`];
}
