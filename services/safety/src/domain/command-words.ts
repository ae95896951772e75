/**
 * One word of a shell command after quote removal: `'rm'` and `"r"m` are both
 * the word rm. A word holding an expansion that only the running shell knows
 * (`$X`, `$(...)`, `{1..3}`) is dynamic: its value is undefined, and only the
 * literal text before the first expansion is known.
 */
export interface ShellWord {
  /** The word as written, quotes and all, for messages. */
  readonly text: string;
  /** Its value after quote removal and escapes; undefined when the word is dynamic. */
  readonly value: string | undefined;
  /** The literal text before its first expansion; equal to `value` when the word is static. */
  readonly prefix: string;
  /**
   * Set when part of a dynamic word is made by running something at run time:
   * a command substitution (`$(...)`, backquotes), a process substitution
   * (`<(...)`), or words xargs reads from its input. A word that only holds
   * variables leaves it unset.
   */
  readonly generated?: true;
}

/** A static word whose value is `value`. */
export function literalWord(value: string, text: string = value): ShellWord {
  return { text, value, prefix: value };
}

/** A dynamic word written as `text`, starting with the literal `prefix`; `generated` when a command makes part of it (see ShellWord.generated). */
export function dynamicWord(text: string, prefix = '', generated = false): ShellWord {
  return generated ? { text, value: undefined, prefix, generated: true } : { text, value: undefined, prefix };
}

/** The word without its first `count` characters, e.g. the value of `of=/dev/sda` or `--target=dir`. */
export function wordAfter(word: ShellWord, count: number): ShellWord {
  if (word.value !== undefined) return literalWord(word.value.slice(count));
  return dynamicWord(word.text, word.prefix.slice(count), word.generated === true);
}

/** A word's value, or its text when it is dynamic: what a message shows. */
export function shownWord(word: ShellWord): string {
  return word.value ?? word.text;
}

/**
 * The program's name as rules know it: the last segment of the word's value
 * (`/usr/bin/rm` and `./rm` are rm). Undefined for a dynamic program.
 */
export function programName(word: ShellWord | undefined): string | undefined {
  if (word?.value === undefined) return undefined;
  return word.value.slice(word.value.lastIndexOf('/') + 1);
}

/** True for `python`, `python3`, `python3.12`, and `pypy3`: interpreters whose `-m` runs a module. */
export function isPythonName(name: string): boolean {
  const rest = name.startsWith('python') ? name.slice('python'.length) : name.startsWith('pypy') ? name.slice('pypy'.length) : undefined;
  return rest !== undefined && [...rest].every((character) => (character >= '0' && character <= '9') || character === '.');
}

/**
 * Matches a name against a pattern where `*` stands for any run of
 * characters (`mkfs.*`, `pip3*`); every other character stands for itself.
 */
export function globMatch(pattern: string, name: string): boolean {
  const parts = pattern.split('*');
  if (parts.length === 1) return pattern === name;
  const first = parts[0] ?? '';
  const last = parts[parts.length - 1] ?? '';
  if (!name.startsWith(first) || name.length < first.length + last.length || !name.endsWith(last)) return false;
  let position = first.length;
  const end = name.length - last.length;
  for (const part of parts.slice(1, -1)) {
    const found = name.indexOf(part, position);
    if (found < 0 || found + part.length > end) return false;
    position = found + part.length;
  }
  return true;
}

/**
 * Options that take the next word as their value, per program, so the words
 * after them are not mistaken for subcommands or operands (`git -C dir push`,
 * `cp -t dest src`). Options written `--name=value` need no entry.
 */
export const valueOptionsByProgram: Readonly<Record<string, readonly string[]>> = {
  git: ['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--super-prefix', '--config-env', '--exec-path'],
  npm: ['--prefix', '-w', '--workspace', '--registry', '--cache', '--userconfig'],
  pnpm: ['-C', '--dir', '-F', '--filter', '--registry'],
  yarn: ['--cwd', '--registry'],
  pip: ['-r', '--requirement', '-c', '--constraint', '-i', '--index-url', '--extra-index-url', '-t', '--target', '-f', '--find-links', '--prefix', '--root', '--python', '--src', '--log', '--cache-dir', '--proxy'],
  uv: ['--directory', '--project', '-p', '--python', '--index-url', '--extra-index-url', '--cache-dir'],
  'apt-get': ['-o', '--option', '-c', '--config-file', '-t', '--target-release'],
  apt: ['-o', '--option', '-c', '--config-file', '-t', '--target-release'],
  cp: ['-t', '--target-directory', '-S', '--suffix'],
  mv: ['-t', '--target-directory', '-S', '--suffix'],
  ln: ['-t', '--target-directory', '-S', '--suffix'],
  install: ['-t', '--target-directory', '-S', '--suffix', '-m', '--mode', '-o', '--owner', '-g', '--group'],
  sed: ['-e', '--expression', '-f', '--file', '-l', '--line-length'],
  mkdir: ['-m', '--mode'],
  touch: ['-d', '--date', '-r', '--reference', '-t'],
  truncate: ['-s', '--size', '-r', '--reference'],
  chown: ['--from'],
  tar: ['-C', '--directory', '-f', '--file', '-T', '--files-from', '-X', '--exclude-from'],
  unzip: ['-d', '-x'],
};

/** The value options of a program, with `pip3`, `pip3.12` and `python -m pip` sharing pip's. */
export function valueOptionsOf(program: string | undefined): readonly string[] {
  if (program === undefined) return [];
  if (program.startsWith('pip')) return valueOptionsByProgram['pip'] ?? [];
  return Object.hasOwn(valueOptionsByProgram, program) ? (valueOptionsByProgram[program] ?? []) : [];
}

/** An option as written: `-rf`, `--force`, or `--target=dir` (name `--target`). */
export interface OptionWord {
  readonly name: string;
  /** Its value: the text after `=`, or the next word for a value option; undefined for a flag. */
  readonly value: ShellWord | undefined;
}

/** A positional argument and its index among the arguments (after the program). */
export interface Positional {
  readonly word: ShellWord;
  readonly index: number;
}

/** The arguments of a command sorted into options and positionals. */
export interface Arguments {
  /** Every option name as written, plus each letter of a short cluster: `-rf` gives `-rf`, `-r` and `-f`. */
  readonly flags: ReadonlySet<string>;
  readonly options: readonly OptionWord[];
  readonly positionals: readonly Positional[];
}

/**
 * Sorts arguments into options and positionals the way getopt does: a word
 * starting with `-` (not `-` alone) is an option until `--`, and a value
 * option takes the next word. A dynamic word counts as a positional, since
 * its value is unknown.
 */
export function splitArguments(args: readonly ShellWord[], valueOptions: readonly string[]): Arguments {
  const flags = new Set<string>();
  const options: OptionWord[] = [];
  const positionals: Positional[] = [];
  let onlyPositionals = false;
  for (let index = 0; index < args.length; index++) {
    const word = args[index] as ShellWord;
    const value = word.value;
    if (onlyPositionals || value === undefined || !value.startsWith('-') || value === '-') {
      positionals.push({ word, index });
      continue;
    }
    if (value === '--') {
      onlyPositionals = true;
      continue;
    }
    const equals = value.startsWith('--') ? value.indexOf('=') : -1;
    const name = equals > 0 ? value.slice(0, equals) : value;
    flags.add(name);
    if (!name.startsWith('--')) for (const letter of name.slice(1)) flags.add(`-${letter}`);
    if (equals > 0) {
      options.push({ name, value: wordAfter(word, equals + 1) });
    } else if (valueOptions.includes(name) && index + 1 < args.length) {
      index += 1;
      options.push({ name, value: args[index] });
    } else {
      options.push({ name, value: undefined });
    }
  }
  return { flags, options, positionals };
}

/** Words of a find expression: tests, actions and operators start it. */
function isFindExpression(word: ShellWord): boolean {
  const value = word.value;
  return value !== undefined && (value.startsWith('-') || value === '(' || value === ')' || value === '!' || value === ',');
}

/**
 * The start paths of `find` (the operands before its expression), after its
 * leading `-H`/`-L`/`-P`/`-D x`/`-Olevel` options; empty means `.`.
 */
export function findStartPaths(args: readonly ShellWord[]): ShellWord[] {
  let index = 0;
  for (; index < args.length; index++) {
    const value = args[index]?.value;
    if (value === '-D') index += 1;
    else if (!(value === '-H' || value === '-L' || value === '-P' || value?.startsWith('-O'))) break;
  }
  const starts: ShellWord[] = [];
  for (; index < args.length && !isFindExpression(args[index] as ShellWord); index++) starts.push(args[index] as ShellWord);
  return starts;
}
