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
