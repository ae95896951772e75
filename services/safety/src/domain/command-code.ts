import { isPythonName, type ShellWord } from './command-words';

/**
 * Where a command's standard input comes from, when the command line says:
 * a pipe from an earlier stage, a here-doc (`<<EOF`), a here-string (`<<<`),
 * or a file (`< f`). Undefined when the command line does not say (the
 * terminal, or whatever ran the command line).
 */
export type StandardInput =
  | { readonly kind: 'pipe' }
  | { readonly kind: 'heredoc'; readonly body: ShellWord }
  | { readonly kind: 'herestring'; readonly body: ShellWord }
  | { readonly kind: 'file'; readonly target: ShellWord };

/** Where a shell or interpreter gets the program it runs. */
export const CodeSource = {
  /** Written in the command line: `-c`/`-e` text, an awk program, a literal here-doc or here-string. */
  INLINE: 'inline',
  /** A script file, a module, or a path only known at run time. */
  FILE: 'file',
  /** Standard input fed by a pipe: `... | sh`, `cat x | python3`. */
  PIPE: 'pipe',
  /** Made at run time by running something: `bash -c "$(...)"`, `source <(...)`, `xargs sh`, a here-string of `$(...)`. */
  COMMAND: 'command',
  /** Held in a variable: `bash -c "$SCRIPT"`, `python3 -c "$CODE"`. */
  VARIABLE: 'variable',
  /** Standard input the command line does not feed: an interactive session. */
  TERMINAL: 'terminal',
} as const;
export type CodeSource = (typeof CodeSource)[keyof typeof CodeSource];

/** The language an interpreter reads, which says which `code` patterns of the rules make sense. */
export type CodeLanguage = 'shell' | 'python' | 'perl' | 'ruby' | 'javascript' | 'php' | 'awk' | 'sed';

/** The program a shell or interpreter runs, as far as the command line shows it. */
export interface ProgramCode {
  readonly language: CodeLanguage;
  readonly source: CodeSource;
  /** The code when the command line holds it (source inline): its value, or its text as written when parts of it are only known at run time. */
  readonly text: string | undefined;
}

/** Shells: `-c` runs the next word, otherwise the first operand is a script, otherwise standard input. */
export const shellPrograms: ReadonlySet<string> = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'mksh', 'ash', 'yash', 'fish', 'csh', 'tcsh', 'busybox-sh']);
/** Options of those shells that take the next word as their value. */
export const shellValueOptions: ReadonlySet<string> = new Set(['-o', '+o', '-O', '+O', '--rcfile', '--init-file']);
/** Paths that name standard input. */
const stdinPaths = new Set(['-', '/dev/stdin', '/dev/fd/0', '/proc/self/fd/0']);

/** How an interpreter's short options read: which letters hold code, and which take a value. */
interface ClusterSyntax {
  /** Letters whose value is code (`-c`, `-e`). */
  readonly code: string;
  /** Letters taking a value: the rest of the cluster, or the next word when the cluster ends there. */
  readonly value: string;
  /** Letters taking only the rest of the cluster as value (`perl -i.bak`). */
  readonly glued: string;
  /** Long options whose value is code, and long options taking a value. */
  readonly longCode: readonly string[];
  readonly longValue: readonly string[];
  /** Letters after which the rest of the arguments belong to a module (`python -m`). */
  readonly module?: string;
  /** True when, without code or a script, it reads its program from standard input. */
  readonly readsStdin: boolean;
}

const syntaxes: Readonly<Record<'python' | 'perl' | 'ruby' | 'javascript' | 'php', ClusterSyntax>> = {
  python: { code: 'c', value: 'WX', glued: '', longCode: [], longValue: ['--check-hash-based-pycs'], module: 'm', readsStdin: true },
  perl: { code: 'eE', value: 'IMm', glued: 'il0FCDdx', longCode: [], longValue: [], readsStdin: true },
  ruby: { code: 'e', value: 'rICEF', glued: 'iKTWx0', longCode: [], longValue: ['--encoding', '--external-encoding', '--internal-encoding'], readsStdin: true },
  javascript: {
    code: 'ep',
    value: 'rC',
    glued: '',
    longCode: ['--eval', '--print'],
    longValue: ['--require', '--import', '--loader', '--experimental-loader', '--input-type', '--conditions', '--env-file', '--title', '--tsconfig'],
    readsStdin: true,
  },
  php: { code: 'r', value: 'cdzt', glued: '', longCode: [], longValue: [], readsStdin: true },
};

/** The interpreter family of a program name, or undefined for a program that is no interpreter. */
function languageOf(program: string): CodeLanguage | undefined {
  if (shellPrograms.has(program)) return 'shell';
  if (isPythonName(program)) return 'python';
  if (program === 'perl' || /^perl5(\.\d+)*$/.test(program)) return 'perl';
  if (program === 'ruby' || program === 'jruby') return 'ruby';
  if (['node', 'nodejs', 'bun', 'tsx', 'ts-node', 'deno'].includes(program)) return 'javascript';
  if (program === 'php' || /^php\d/.test(program)) return 'php';
  if (['awk', 'gawk', 'mawk', 'nawk', 'busybox-awk'].includes(program)) return 'awk';
  if (program === 'sed' || program === 'gsed') return 'sed';
  return undefined;
}

/**
 * The program a shell or interpreter runs, from its arguments and its
 * standard input; undefined for a program that is no interpreter.
 * `source`/`.` count as the shell running their operand.
 */
export function programCode(program: string | undefined, args: readonly ShellWord[], stdin: StandardInput | undefined): ProgramCode | undefined {
  if (program === undefined) return undefined;
  if (program === 'source' || program === '.') {
    const script = args[0];
    return script === undefined ? undefined : scriptOperand('shell', script, stdin);
  }
  const language = languageOf(program);
  switch (language) {
    case undefined:
      return undefined;
    case 'shell':
      return shellCode(args, stdin);
    case 'awk':
      return awkCode(args);
    case 'sed':
      return sedCode(args);
    default:
      if (program === 'deno') return args[0]?.value === 'eval' && args[1] !== undefined ? inline('javascript', [args[1]]) : { language, source: CodeSource.FILE, text: undefined };
      if (program === 'bun' && args[0]?.value !== undefined && !args[0].value.startsWith('-')) return { language, source: CodeSource.FILE, text: undefined };
      return clusterCode(language, syntaxes[language], args, stdin);
  }
}

/**
 * For a shell: the `-c` string, or undefined when it has none. The shell
 * reads its script from standard input when it has neither `-c` nor a
 * script operand (or has `-s`, or the operand names standard input).
 */
export function shellCode(args: readonly ShellWord[], stdin: StandardInput | undefined): ProgramCode {
  const { index, runsString, readsStdin } = shellOptions(args);
  const operand = args[index];
  if (runsString) return operand === undefined ? { language: 'shell', source: CodeSource.TERMINAL, text: undefined } : inline('shell', [operand]);
  if (readsStdin || operand === undefined) return fromStdin('shell', stdin);
  return scriptOperand('shell', operand, stdin);
}

/**
 * A shell's leading options: where its first operand is, and whether an
 * option cluster holds `c` (the operand is a script) or `s` (the script is
 * read from standard input). `-o NAME`-style options take their value.
 */
export function shellOptions(args: readonly ShellWord[]): { index: number; runsString: boolean; readsStdin: boolean } {
  let index = 0;
  let runsString = false;
  let readsStdin = false;
  for (; index < args.length; index++) {
    const value = args[index]?.value;
    if (value === undefined) break;
    if (value === '--' || value === '-') {
      if (value === '--') index += 1;
      break;
    }
    if (shellValueOptions.has(value)) {
      index += 1;
      continue;
    }
    if ((value.startsWith('-') || value.startsWith('+')) && value.length > 1) {
      if (!value.startsWith('--') && value.slice(1).includes('c')) runsString = true;
      if (!value.startsWith('--') && value.slice(1).includes('s')) readsStdin = true;
      continue;
    }
    break;
  }
  return { index, runsString, readsStdin };
}

/** A script operand: standard input when it names it, a file otherwise, made at run time when a command writes it (`<(curl ...)`). */
function scriptOperand(language: CodeLanguage, operand: ShellWord, stdin: StandardInput | undefined): ProgramCode {
  if (operand.value !== undefined && stdinPaths.has(operand.value)) return fromStdin(language, stdin);
  if (operand.value === undefined && operand.generated === true) return { language, source: CodeSource.COMMAND, text: operand.text };
  return { language, source: CodeSource.FILE, text: undefined };
}

/** Code read from standard input. */
function fromStdin(language: CodeLanguage, stdin: StandardInput | undefined): ProgramCode {
  switch (stdin?.kind) {
    case undefined:
      return { language, source: CodeSource.TERMINAL, text: undefined };
    case 'pipe':
      return { language, source: CodeSource.PIPE, text: undefined };
    case 'file':
      return { language, source: CodeSource.FILE, text: undefined };
    case 'heredoc':
    case 'herestring':
      return inline(language, [stdin.body]);
  }
}

/** Code written in the command line; when parts of it are only known at run time, where those come from decides. */
function inline(language: CodeLanguage, words: readonly ShellWord[]): ProgramCode {
  if (words.some((word) => word.generated === true)) return { language, source: CodeSource.COMMAND, text: words.map((word) => word.value ?? word.text).join('\n') };
  // A variable in code a shell runs could hold any command; in another language's code it is data.
  if (language === 'shell' && words.some((word) => word.value === undefined)) return { language, source: CodeSource.VARIABLE, text: words.map((word) => word.text).join('\n') };
  // A word that is nothing but a variable is code only known at run time; variables inside code are data to it.
  if (words.some(isOnlyVariable)) return { language, source: CodeSource.VARIABLE, text: words.map((word) => word.text).join('\n') };
  const text = words.map((word) => word.value ?? word.text).join('\n');
  return { language, source: CodeSource.INLINE, text };
}

/** `"$CODE"`, `$CODE`, `${CODE}`: a word that is nothing but one variable. */
function isOnlyVariable(word: ShellWord): boolean {
  return word.value === undefined && word.prefix === '' && /^"?\$(\{[A-Za-z_][A-Za-z0-9_]*\}|[A-Za-z_][A-Za-z0-9_]*)"?$/.test(word.text);
}

/** python -c, perl -e, ruby -e, node -e/-p, php -r: code options in clusters, a script operand, or standard input. */
function clusterCode(language: CodeLanguage, syntax: ClusterSyntax, args: readonly ShellWord[], stdin: StandardInput | undefined): ProgramCode {
  const code: ShellWord[] = [];
  for (let index = 0; index < args.length; index++) {
    const word = args[index] as ShellWord;
    const value = word.value;
    if (value === undefined || value === '-' || !value.startsWith('-')) {
      if (code.length > 0) break;
      return scriptOperand(language, word, stdin);
    }
    if (value === '--') {
      const operand = args[index + 1];
      if (code.length > 0 || operand === undefined) break;
      return scriptOperand(language, operand, stdin);
    }
    if (value.startsWith('--')) {
      const equals = value.indexOf('=');
      const name = equals > 0 ? value.slice(0, equals) : value;
      const isCode = syntax.longCode.includes(name);
      if (!isCode && !syntax.longValue.includes(name)) continue;
      const given = equals > 0 ? { text: value.slice(equals + 1), value: value.slice(equals + 1), prefix: value.slice(equals + 1) } : args[++index];
      if (isCode && given !== undefined) code.push(given);
      continue;
    }
    for (let letter = 1; letter < value.length; letter++) {
      const character = value[letter] as string;
      if (syntax.module?.includes(character)) return { language, source: CodeSource.FILE, text: undefined };
      const rest = value.slice(letter + 1);
      if (syntax.code.includes(character)) {
        const given = rest !== '' ? { text: rest, value: rest, prefix: rest } : args[++index];
        if (given !== undefined) code.push(given);
        break;
      }
      if (syntax.value.includes(character)) {
        if (rest === '') index += 1;
        break;
      }
      if (syntax.glued.includes(character)) break;
    }
  }
  if (code.length > 0) return inline(language, code);
  return syntax.readsStdin ? fromStdin(language, stdin) : { language, source: CodeSource.FILE, text: undefined };
}

/** awk: the program is `-f FILE`, `-e`/`--source` text, or the first operand. */
function awkCode(args: readonly ShellWord[]): ProgramCode {
  const code: ShellWord[] = [];
  for (let index = 0; index < args.length; index++) {
    const word = args[index] as ShellWord;
    const value = word.value;
    if (value === undefined || !value.startsWith('-') || value === '-') return code.length > 0 ? inline('awk', code) : inline('awk', [word]);
    if (value === '--') {
      const operand = args[index + 1];
      return code.length > 0 || operand === undefined ? inline('awk', code) : inline('awk', [operand]);
    }
    const [name, glued] = value.startsWith('--') ? splitLong(value) : [value.slice(0, 2), value.length > 2 ? value.slice(2) : undefined];
    const next = () => (glued !== undefined ? { text: glued, value: glued, prefix: glued } : args[++index]);
    if (name === '-f' || name === '--file' || name === '-E' || name === '--exec') return { language: 'awk', source: CodeSource.FILE, text: undefined };
    if (name === '-e' || name === '--source') {
      const given = next();
      if (given !== undefined) code.push(given);
    } else if (['-F', '-v', '-i', '--include', '--field-separator', '--assign', '-l', '--load'].includes(name)) {
      next();
    }
  }
  return code.length > 0 ? inline('awk', code) : { language: 'awk', source: CodeSource.TERMINAL, text: undefined };
}

/** sed: the script is the `-e` texts, `-f FILE`, or the first operand. */
function sedCode(args: readonly ShellWord[]): ProgramCode {
  const code: ShellWord[] = [];
  for (let index = 0; index < args.length; index++) {
    const word = args[index] as ShellWord;
    const value = word.value;
    if (value === undefined || !value.startsWith('-') || value === '-') return code.length > 0 ? inline('sed', code) : inline('sed', [word]);
    if (value === '--') break;
    const [name, glued] = value.startsWith('--') ? splitLong(value) : [value.slice(0, 2), value.length > 2 ? value.slice(2) : undefined];
    const next = () => (glued !== undefined ? { text: glued, value: glued, prefix: glued } : args[++index]);
    if (name === '-f' || name === '--file') return { language: 'sed', source: CodeSource.FILE, text: undefined };
    if (name === '-e' || name === '--expression') {
      const given = next();
      if (given !== undefined) code.push(given);
    } else if (name === '-l' || name === '--line-length') {
      next();
    }
  }
  return code.length > 0 ? inline('sed', code) : { language: 'sed', source: CodeSource.TERMINAL, text: undefined };
}

function splitLong(value: string): [string, string | undefined] {
  const equals = value.indexOf('=');
  return equals > 0 ? [value.slice(0, equals), value.slice(equals + 1)] : [value, undefined];
}
