import type { Node } from 'web-tree-sitter';
import { shellCode, shellOptions, type StandardInput } from './command-code';
import { dynamicWord, findStartPaths, isPythonName, literalWord, programName, splitArguments, type ShellWord } from './command-words';
import { decodeEscapes, firstSyntaxError, Grammar, type Parsers } from './syntax';

/** A redirection of a command: `> out.txt`, `2>> log`, `2>&1`, `< in.txt`. */
export interface Redirect {
  /** The operator as written without its descriptor: `>`, `>>`, `&>`, `>&`, `<`... */
  readonly operator: string;
  readonly target: ShellWord;
}

/**
 * One simple command found in a command line, wherever it sat: in a
 * pipeline, a list, a subshell, a command substitution, a function body, a
 * string given to `bash -c`, or behind a wrapper (`sudo`, `env`, `timeout`,
 * `xargs`, `find -exec`, `python -m`), in which case the wrapper is a command
 * of its own too.
 */
export interface SimpleCommand {
  /** The program and its arguments; empty for a statement that only redirects (`> out.txt`). */
  readonly words: readonly ShellWord[];
  /** File redirections of the command or of the compound statement around it. */
  readonly redirects: readonly Redirect[];
  /**
   * Where it runs, after the `cd`s before it: '' is where the command line
   * starts, a relative path is below that, an absolute or `~` path is where a
   * `cd` went. Undefined once a `cd` went somewhere only known at run time.
   */
  readonly directory: string | undefined;
  /** Program names of the later stages of its pipeline (`curl x | sh` gives curl ['sh']). */
  readonly pipedInto: readonly string[];
  /** Where its standard input comes from, when the command line says (see StandardInput). */
  readonly stdin: StandardInput | undefined;
  /** `NAME=value` words it runs with: written before it (`X=1 cmd`) or given to `env`. */
  readonly assignments: readonly ShellWord[];
  /** The wrappers and shell strings it was found in, outermost first: ['sudo'], ['bash -c', 'xargs']. */
  readonly via: readonly string[];
  /** Its program is a shell function of this command line that calls itself (`:(){ :|:& };:`). */
  readonly recursiveFunction: boolean;
  /** Source of the command as written (for a command inside a shell string, of the command holding the string). */
  readonly text: string;
  /** 1-based line and column of `text` in the command line; 0 for a command given as argv. */
  readonly line: number;
  readonly column: number;
}

/** Why a command line could not be checked. */
export const ParseProblemKind = {
  /** The shell would not run it: a syntax error, here or in a `bash -c` string. */
  SYNTAX: 'syntax',
  /** Nested deeper than the check follows (shell strings inside shell strings, or the syntax tree itself). */
  TOO_COMPLEX: 'too-complex',
} as const;
export type ParseProblemKind = (typeof ParseProblemKind)[keyof typeof ParseProblemKind];

export interface ParseProblem {
  readonly kind: ParseProblemKind;
  /** 1-based; 0 when unknown. */
  readonly line: number;
  readonly column: number;
  /** What is wrong and where, one line. */
  readonly message: string;
}

/** The commands of a command line, or why there are none to check. */
export type ParsedCommandLine = { readonly ok: true; readonly commands: readonly SimpleCommand[] } | { readonly ok: false; readonly problem: ParseProblem };

export interface ParseOptions {
  /** How deep shell strings inside shell strings are followed (`bash -c "sh -c '...'"` is 2). */
  readonly maxNestingDepth: number;
}

/**
 * Levels of the syntax tree followed; deeper input is refused rather than
 * risking the stack. Lists (`a && b && ...`) are flattened, so only real
 * nesting counts, and real commands nest a handful of levels.
 */
const maxTreeDepth = 200;
/** Longest excerpt of source quoted in a parse problem, characters. */
const maxExcerpt = 40;

/** Shells whose `-c` string, or here-doc, is parsed and checked as a script of its own. */
const shells = new Set(['sh', 'bash', 'zsh', 'dash', 'ksh', 'mksh', 'ash', 'yash']);

/** A program that runs the command given by its remaining arguments once its own options are skipped. */
interface Wrapper {
  readonly valueOptions: readonly string[];
  /** Operands of the wrapper itself before the command (timeout's duration). */
  readonly leadingOperands?: number;
  /** `NAME=value` words before the command set the environment (env, sudo). */
  readonly assignments?: boolean;
  /** Options with which it runs no command (`command -v ls`). */
  readonly noCommandFlags?: readonly string[];
}

const wrappers: Readonly<Record<string, Wrapper>> = {
  sudo: {
    valueOptions: ['-u', '--user', '-g', '--group', '-h', '--host', '-p', '--prompt', '-C', '--close-from', '-D', '--chdir', '-r', '--role', '-t', '--type', '-U', '--other-user', '-T', '--command-timeout'],
    assignments: true,
    noCommandFlags: ['-l', '--list', '-v', '--validate', '-k', '-K', '-V', '--version'],
  },
  doas: { valueOptions: ['-u', '-C'] },
  // env's own NAME=value words are kept: the command runs with them (see envCommand).
  env: { valueOptions: ['-u', '--unset', '-C', '--chdir', '-S', '--split-string'] },
  timeout: { valueOptions: ['-s', '--signal', '-k', '--kill-after'], leadingOperands: 1 },
  nice: { valueOptions: ['-n', '--adjustment'] },
  nohup: { valueOptions: [] },
  setsid: { valueOptions: [] },
  time: { valueOptions: ['-f', '--format', '-o', '--output'] },
  command: { valueOptions: [], noCommandFlags: ['-v', '-V'] },
  builtin: { valueOptions: [] },
  exec: { valueOptions: ['-a'] },
  stdbuf: { valueOptions: ['-i', '-o', '-e', '--input', '--output', '--error'] },
  ionice: { valueOptions: ['-c', '--class', '-n', '--classdata'], noCommandFlags: ['-p', '--pid', '-P', '--pgid', '-u', '--uid'] },
  xargs: { valueOptions: ['-a', '--arg-file', '-d', '--delimiter', '-E', '-I', '-L', '-n', '--max-args', '-P', '--max-procs', '-s', '--max-chars', '--process-slot-var'] },
  // Multi-call binaries: the first operand is the program (`busybox wget`, `busybox sh -c`).
  busybox: { valueOptions: [], noCommandFlags: ['--list', '--list-full', '--help'] },
  toybox: { valueOptions: [], noCommandFlags: ['--long', '--help'] },
  // Package runners run a program of a package: `npx tsc`, `bunx prettier`.
  // `npx -c 'string'` runs a shell string; the policy denies it (cmd.package-download), so -c takes it as a value here.
  npx: { valueOptions: ['-p', '--package', '--registry', '--cache', '--userconfig', '-w', '--workspace', '-c', '--call'], noCommandFlags: ['-v', '--version', '-h', '--help'] },
  'cross-env': { valueOptions: [], assignments: true },
  bunx: { valueOptions: ['-p', '--package'] },
  pnpx: { valueOptions: [] },
  uvx: { valueOptions: ['--from', '--with', '-p', '--python', '--index-url', '--extra-index-url'] },
  // Tracers and runners that start the command after their own options.
  strace: { valueOptions: ['-e', '-o', '-p', '-s', '-u', '-E', '-P', '-a', '-b', '-I', '-O', '-S', '-X'] },
  ltrace: { valueOptions: ['-e', '-o', '-p', '-s', '-u', '-a', '-n', '-l'] },
  valgrind: { valueOptions: [] },
  unbuffer: { valueOptions: [] },
  'xvfb-run': { valueOptions: ['-n', '--server-num', '-s', '--server-args', '-e', '--error-file', '-f', '--auth-file', '-p', '--xauth-protocol'] },
  torsocks: { valueOptions: ['-u', '-p', '-a', '-P'] },
  proxychains: { valueOptions: ['-f'] },
  proxychains4: { valueOptions: ['-f'] },
  chroot: { valueOptions: ['--userspec', '--groups'], leadingOperands: 1 },
  unshare: { valueOptions: ['-S', '--setuid', '-G', '--setgid', '-R', '--root', '-w', '--wd'] },
  taskset: { valueOptions: [], leadingOperands: 1 },
};

/** What a wrapper runs: more words, or a shell string to parse. */
type Inner =
  | { readonly kind: 'words'; readonly words: readonly ShellWord[]; readonly via: string; readonly chdir?: ShellWord; readonly assignments?: readonly ShellWord[] }
  | { readonly kind: 'script'; readonly script: ShellWord; readonly via: string };

/** The part of the shell's state that decides what later commands touch. */
interface Scope {
  /** See SimpleCommand.directory; `cd` changes it for the statements after it in the same shell. */
  directory: string | undefined;
  readonly via: readonly string[];
  /** Shell strings this scope is inside of. */
  readonly nesting: number;
  /** Standard input of the commands in this scope, when the command line sets it (a pipe, a redirection of a compound statement). */
  readonly stdin?: StandardInput | undefined;
  /** Inside a shell string: the command holding it, which findings point at. */
  readonly origin: Origin | undefined;
}

interface Origin {
  readonly text: string;
  readonly line: number;
  readonly column: number;
}

/** A command as recorded during the walk: a pipeline adds to `pipedInto` once its later stages are known. */
type Recorded = Omit<SimpleCommand, 'pipedInto'> & { pipedInto: readonly string[] };

/** Unwinds the walk when the command line cannot be checked; caught at the top. */
class ProblemSignal {
  constructor(readonly problem: ParseProblem) {}
}

/**
 * The simple commands of a shell command line, parsed with tree-sitter-bash
 * and walked in execution order, so `cd` is followed into the commands after
 * it. Words are resolved through quoting, escapes and concatenation; an
 * expansion makes a word dynamic. Shell strings (`bash -c`, `sh -c`, `su -c`,
 * `eval`, `env -S`) are parsed in turn, at most `maxNestingDepth` deep.
 * Never throws for bad input: a syntax error anywhere, or nesting deeper
 * than it follows, comes back as the problem.
 */
export function parseCommandLine(parsers: Parsers, commandLine: string, options: ParseOptions): ParsedCommandLine {
  const extraction = new Extraction(parsers, options);
  return extraction.run(() => extraction.script(commandLine, { directory: '', via: [], nesting: 0, origin: undefined }, undefined, 0));
}

/**
 * The commands of an argv run without a shell: one simple command, plus
 * what its wrappers run (`sudo rm ...`, `bash -c '...'`).
 */
export function commandsOfArgv(parsers: Parsers, argv: readonly string[], options: ParseOptions): ParsedCommandLine {
  const extraction = new Extraction(parsers, options);
  const text = argv.map(quoteForShell).join(' ');
  const origin = { text, line: 0, column: 0 };
  return extraction.run(() => extraction.emit(argv.map((value) => literalWord(value, quoteForShell(value))), [], [], { directory: '', via: [], nesting: 0, origin }, origin, 0));
}

class Extraction {
  readonly commands: Recorded[] = [];
  /** Shell functions defined so far, and whether each calls itself. */
  private readonly functions = new Map<string, boolean>();

  constructor(
    private readonly parsers: Parsers,
    private readonly options: ParseOptions,
  ) {}

  run(walk: () => void): ParsedCommandLine {
    try {
      walk();
      return { ok: true, commands: this.commands };
    } catch (error) {
      if (error instanceof ProblemSignal) return { ok: false, problem: error.problem };
      throw error;
    }
  }

  /** Parses `source` as a script and walks it; `via` names the command that runs it when it is a shell string. */
  script(source: string, scope: Scope, via: string | undefined, depth: number): void {
    const tree = this.parsers.parse(Grammar.BASH, source);
    if (tree === null) throw new ProblemSignal({ kind: ParseProblemKind.SYNTAX, line: scope.origin?.line ?? 0, column: scope.origin?.column ?? 0, message: 'the shell parser gave up on the command line' });
    try {
      const error = firstSyntaxError(tree.rootNode);
      if (error !== undefined) throw new ProblemSignal(syntaxProblem(error, via, scope.origin));
      this.visit(tree.rootNode, scope, depth);
    } finally {
      tree.delete();
    }
  }

  private visit(node: Node, scope: Scope, depth: number): void {
    if (depth > maxTreeDepth) {
      throw new ProblemSignal({ kind: ParseProblemKind.TOO_COMPLEX, ...positionOf(node, scope.origin), message: `the command line nests more than ${maxTreeDepth} levels deep, too deep to check` });
    }
    switch (node.type) {
      case 'command':
        return this.command(node, scope, [], depth);
      case 'redirected_statement':
        return this.redirected(node, scope, depth);
      case 'pipeline':
        return this.pipeline(node, scope, depth);
      case 'list':
        for (const part of flattenList(node)) this.visit(part, scope, depth + 1);
        return;
      case 'subshell':
      case 'command_substitution':
      case 'process_substitution':
        // A child shell: its `cd` does not move the commands after it.
        return this.children(node, { ...scope }, depth);
      case 'function_definition':
        return this.functionDefinition(node, scope, depth);
      case 'declaration_command':
        return this.declaration(node, scope, depth);
      case 'comment':
        return;
      default:
        return this.children(node, scope, depth);
    }
  }

  private children(node: Node, scope: Scope, depth: number): void {
    for (const child of node.namedChildren) this.visit(child, scope, depth + 1);
  }

  /** `statement` is the redirected statement around the command, whose text findings show with the redirections. */
  private command(node: Node, scope: Scope, outerRedirects: readonly Node[], depth: number, statement: Node = node): void {
    // Expansions in the words, assignments and redirections run before the command.
    for (const child of node.namedChildren) this.visit(child, scope, depth + 1);
    const name = node.childForFieldName('name');
    if (name === null) return;
    const words = [resolveWord(name), ...node.childrenForFieldName('argument').map(resolveWord)];
    const redirectNodes = [...outerRedirects, ...node.namedChildren.filter((child) => redirectTypes.has(child.type))];
    const redirects = redirectNodes.flatMap(resolveRedirects);
    const assignments = node.namedChildren.filter((child) => child.type === 'variable_assignment').map(resolveAssignment);
    this.emit(words, redirects, assignments, { ...scope, stdin: stdinOf(redirectNodes) ?? scope.stdin }, scope.origin ?? originOf(statement), depth, scope);
  }

  /** `export NAME=value`, `local`, `declare`...: a command whose words are the assignments it makes. */
  private declaration(node: Node, scope: Scope, depth: number): void {
    for (const child of node.namedChildren) this.visit(child, scope, depth + 1);
    const keyword = node.children[0];
    if (keyword === undefined) return;
    const words = [literalWord(keyword.text), ...node.namedChildren.map((child) => (child.type === 'variable_assignment' ? resolveAssignment(child) : resolveWord(child)))];
    this.emit(words, [], [], scope, scope.origin ?? originOf(node), depth);
  }

  private redirected(node: Node, scope: Scope, depth: number): void {
    const redirectNodes = node.childrenForFieldName('redirect');
    for (const redirect of redirectNodes) this.visit(redirect, scope, depth + 1);
    const body = node.childForFieldName('body');
    if (body?.type === 'command') return this.command(body, scope, redirectNodes, depth + 1, node);
    // Redirections of a compound statement (`{ a; b; } > f`, `> f` alone) are opened before its body runs.
    const directory = scope.directory;
    const stdin = stdinOf(redirectNodes);
    if (body !== null) this.visit(body, stdin === undefined ? scope : { ...scope, stdin }, depth + 1);
    const redirects = redirectNodes.flatMap(resolveRedirects);
    if (redirects.length > 0) this.commands.push({ words: [], redirects, directory, pipedInto: [], stdin: undefined, assignments: [], via: scope.via, recursiveFunction: false, ...(scope.origin ?? originOf(node)) });
  }

  private pipeline(node: Node, scope: Scope, depth: number): void {
    const stageStarts: number[] = [];
    for (const [index, stage] of node.namedChildren.entries()) {
      stageStarts.push(this.commands.length);
      // Every stage runs in a child shell; the later ones read the output of the one before.
      this.visit(stage, index === 0 ? { ...scope } : { ...scope, stdin: { kind: 'pipe' } }, depth + 1);
    }
    // From the last stage back, so each stage learns every program that reads its output.
    let later: string[] = [];
    let end = this.commands.length;
    for (let stage = stageStarts.length - 1; stage >= 0; stage--) {
      const start = stageStarts[stage] ?? end;
      const commands = this.commands.slice(start, end);
      for (const command of commands) command.pipedInto = [...command.pipedInto, ...later];
      later = [...commands.map((command) => programName(command.words[0])).filter((program) => program !== undefined), ...later];
      end = start;
    }
  }

  private functionDefinition(node: Node, scope: Scope, depth: number): void {
    const name = node.childForFieldName('name')?.text;
    const body = node.childForFieldName('body');
    if (name !== undefined) this.functions.set(name, body !== null && body.descendantsOfType('command').some((call) => call.childForFieldName('name')?.text === name));
    // The body is checked where it is defined, as if it ran there: it runs wherever it is called.
    if (body !== null) this.visit(body, { ...scope }, depth + 1);
  }

  /**
   * Records one simple command, follows its `cd`, and walks what it runs in
   * turn. `scope` is the command's own (its standard input); `shell` is the
   * scope of the shell running it, whose directory a `cd` moves.
   */
  emit(words: readonly ShellWord[], redirects: readonly Redirect[], assignments: readonly ShellWord[], scope: Scope, origin: Origin, depth: number, shell: Scope = scope): void {
    const program = programName(words[0]);
    this.commands.push({
      words,
      redirects,
      directory: scope.directory,
      pipedInto: [],
      stdin: scope.stdin,
      assignments,
      via: scope.via,
      recursiveFunction: program !== undefined && this.functions.get(program) === true,
      ...origin,
    });
    if (program === 'cd' || program === 'pushd') shell.directory = changeDirectory(scope.directory, splitArguments(words.slice(1), []).positionals[0]?.word);
    else if (program === 'popd') shell.directory = undefined;
    for (const inner of [...innerCommands(words, program), ...stdinScript(words, program, scope.stdin), ...variableCommands(assignments, words, program)]) {
      const via = [...scope.via, inner.via];
      if (inner.kind === 'words') {
        if (inner.words.length === 0) continue;
        const directory = inner.chdir === undefined ? scope.directory : changeDirectory(scope.directory, inner.chdir);
        this.emit(inner.words, [], inner.assignments ?? [], { ...scope, directory, via }, origin, depth + 1);
      } else if (inner.script.value === undefined) {
        // A script only known at run time: checked as a command whose program is unknown.
        this.commands.push({ words: [inner.script], redirects: [], directory: scope.directory, pipedInto: [], stdin: scope.stdin, assignments: [], via, recursiveFunction: false, ...origin });
      } else {
        if (scope.nesting >= this.options.maxNestingDepth) {
          throw new ProblemSignal({
            kind: ParseProblemKind.TOO_COMPLEX,
            line: origin.line,
            column: origin.column,
            message: `shell strings nest more than ${this.options.maxNestingDepth} deep here (${via.join(' inside ')}), too deep to check`,
          });
        }
        // A script read from a here-doc has used up standard input; a `-c` script shares the shell's.
        const stdin = inner.via.endsWith('<<') ? undefined : scope.stdin;
        this.script(inner.script.value, { directory: scope.directory, via, nesting: scope.nesting + 1, origin, stdin }, inner.via, depth + 1);
      }
    }
  }
}

/** The statements of `a && b || c` in order; tree-sitter nests such lists to the left. */
function flattenList(node: Node): Node[] {
  const parts: Node[] = [];
  let current: Node | undefined = node;
  while (current?.type === 'list') {
    const children: Node[] = current.namedChildren;
    parts.unshift(...children.slice(1));
    current = children[0];
  }
  if (current !== undefined) parts.unshift(current);
  return parts;
}

/** Where `cd target` leaves a shell that was in `current` (see SimpleCommand.directory). */
function changeDirectory(current: string | undefined, target: ShellWord | undefined): string | undefined {
  if (target === undefined) return '~';
  const value = target.value;
  if (value === undefined || value === '-') return undefined;
  if (value.startsWith('/') || value.startsWith('~')) return value;
  if (current === undefined) return undefined;
  return current === '' ? value : `${current}/${value}`;
}

/**
 * The script a shell reads from a here-doc or here-string (`bash <<EOF`,
 * `sh <<< "..."`), parsed like a `-c` string. A pipe or a file on standard
 * input is left to the policy (CodeSource): its content is not in the line.
 */
function stdinScript(words: readonly ShellWord[], program: string | undefined, stdin: StandardInput | undefined): Inner[] {
  if (program === undefined || !shells.has(program) || (stdin?.kind !== 'heredoc' && stdin?.kind !== 'herestring')) return [];
  const code = shellCode(words.slice(1), stdin);
  if (code.source === 'terminal' || code.source === 'file' || code.source === 'pipe') return [];
  // A -c script was taken by innerCommands; here only what standard input holds.
  const readsStdin = !words.slice(1).some((word) => word.value !== undefined && /^[-+][^-]*c/.test(word.value));
  return readsStdin ? [{ kind: 'script', script: stdin.body, via: `${program} <<` }] : [];
}

/**
 * Variables whose value a program runs as a shell command (`GIT_PAGER`,
 * `GIT_SSH_COMMAND`, `EDITOR`...): set before a command, by env, or by export,
 * their value is checked as a script.
 */
const commandVariables = new Set([
  'GIT_PAGER',
  'PAGER',
  'GIT_EDITOR',
  'EDITOR',
  'VISUAL',
  'GIT_SEQUENCE_EDITOR',
  'GIT_EXTERNAL_DIFF',
  'GIT_SSH_COMMAND',
  'GIT_ASKPASS',
  'SSH_ASKPASS',
  'GIT_PROXY_COMMAND',
  'MANPAGER',
  'LESSOPEN',
  'LESSCLOSE',
  'BROWSER',
  'PROMPT_COMMAND',
]);

/** The values of command variables (see commandVariables) the command sets, as scripts. */
function variableCommands(assignments: readonly ShellWord[], words: readonly ShellWord[], program: string | undefined): Inner[] {
  const set = ['export', 'declare', 'typeset', 'readonly', 'local'].includes(program ?? '') ? [...assignments, ...words.slice(1)] : assignments;
  const inners: Inner[] = [];
  for (const word of set) {
    const source = word.value ?? word.prefix;
    const equals = source.indexOf('=');
    if (equals < 1 || !commandVariables.has(source.slice(0, equals))) continue;
    const name = source.slice(0, equals);
    // LESSOPEN may start with | or ||, which only says how less reads the output.
    const script = word.value === undefined ? dynamicWord(word.text, '', word.generated === true) : literalWord(word.value.slice(equals + 1).replace(/^\|\|?/, ''));
    if (script.value?.trim() !== '') inners.push({ kind: 'script', script, via: `${name}=` });
  }
  return inners;
}

/** Node types of redirections attached to a command. */
const redirectTypes = new Set(['file_redirect', 'heredoc_redirect', 'herestring_redirect']);

/** Standard input as the last redirection of it sets it, or undefined when none does. */
function stdinOf(redirects: readonly Node[]): StandardInput | undefined {
  let stdin: StandardInput | undefined;
  for (const redirect of redirects) {
    if (redirect.type === 'heredoc_redirect') {
      stdin = { kind: 'heredoc', body: heredocBody(redirect) };
    } else if (redirect.type === 'herestring_redirect') {
      const body = redirect.namedChildren[redirect.namedChildren.length - 1];
      if (body !== undefined) stdin = { kind: 'herestring', body: resolveWord(body) };
    } else if (redirect.type === 'file_redirect') {
      const operator = redirect.children.find((child) => !child.isNamed)?.type;
      const descriptor = redirect.childForFieldName('descriptor')?.text;
      const destination = redirect.childForFieldName('destination');
      if (operator === '<' && (descriptor === undefined || descriptor === '0') && destination !== null) stdin = { kind: 'file', target: resolveWord(destination) };
    }
  }
  return stdin;
}

/**
 * The text of a here-doc. With a quoted delimiter (`<<'EOF'`) it is literal;
 * otherwise expansions in it are made at run time and backslashes escape `$`,
 * `` ` `` and `\`.
 */
function heredocBody(redirect: Node): ShellWord {
  const body = redirect.namedChildren.find((child) => child.type === 'heredoc_body');
  if (body === undefined) return literalWord('');
  const start = redirect.namedChildren.find((child) => child.type === 'heredoc_start')?.text ?? '';
  if (/['"\\]/.test(start)) return literalWord(body.text);
  const expansions = body.namedChildren.filter((child) => child.type !== 'heredoc_content');
  if (expansions.length === 0) return literalWord(body.text.replace(/\\([$`\\])/g, '$1').replace(/\\\n/g, ''), body.text);
  return dynamicWord(body.text, '', expansions.some(runsCommand));
}

/** A `NAME=value` assignment before a command, as one word. */
function resolveAssignment(node: Node): ShellWord {
  const name = node.childForFieldName('name')?.text ?? '';
  const value = node.childForFieldName('value');
  if (value === null) return literalWord(`${name}=`, node.text);
  const word = resolveWord(value);
  return word.value === undefined ? dynamicWord(node.text, `${name}=${word.prefix}`, word.generated === true) : literalWord(`${name}=${word.value}`, node.text);
}

/** A node whose value is made by running a command: `$(...)`, backquotes, `<(...)`, or an expansion holding one. */
function runsCommand(node: Node): boolean {
  return node.type === 'command_substitution' || node.type === 'process_substitution' || node.descendantsOfType(['command_substitution', 'process_substitution']).length > 0;
}

/** What a command runs in turn, when its program is a wrapper, a shell with `-c`, `eval`, `python -m` or `find -exec`. */
function innerCommands(words: readonly ShellWord[], program: string | undefined): Inner[] {
  if (program === undefined) return [];
  const args = words.slice(1);
  if (shells.has(program)) return shellString(args, program);
  if (isPythonName(program)) return pythonModule(args, program);
  switch (program) {
    case 'eval':
      return args.length === 0 ? [] : [{ kind: 'script', script: joinWords(args), via: 'eval' }];
    case 'trap': {
      // trap 'commands' SIGNAL...: the commands run when the signal (or EXIT) comes.
      const action = args[0];
      if (action === undefined || action.value === '-' || action.value === '' || action.value?.startsWith('-') === true || args.length < 2) return [];
      return [{ kind: 'script', script: action, via: 'trap' }];
    }
    case 'watch': {
      // watch runs its arguments joined by spaces through `sh -c`.
      const unwrapped = unwrap(args, { valueOptions: ['-n', '--interval', '-d', '--differences', '-q', '--equexit'] });
      return unwrapped === undefined || unwrapped.rest.length === 0 ? [] : [{ kind: 'script', script: joinWords(unwrapped.rest), via: 'watch' }];
    }
    case 'script': {
      const command = splitArguments(args, ['-c', '--command', '-E', '--echo', '-I', '--log-in', '-O', '--log-out', '-T', '--log-timing', '-B', '--log-io', '-m', '--logging-format', '-o', '--output-limit']).options.find(
        (option) => option.name === '-c' || option.name === '--command',
      );
      return command?.value === undefined ? [] : [{ kind: 'script', script: command.value, via: 'script -c' }];
    }
    case 'su': {
      const command = splitArguments(args, ['-c', '--command', '-s', '--shell', '-g', '--group', '-G', '--supp-group', '-w', '--whitelist-environment']).options.find(
        (option) => option.name === '-c' || option.name === '--command',
      );
      return command?.value === undefined ? [] : [{ kind: 'script', script: command.value, via: 'su -c' }];
    }
    case 'find':
      return findExecs(args);
    case 'xargs':
      return xargsCommand(args);
    case 'env':
      return envCommand(args);
    default: {
      const wrapper = wrappers[program];
      if (wrapper === undefined || !Object.hasOwn(wrappers, program)) return [];
      const unwrapped = unwrap(args, wrapper);
      return unwrapped === undefined ? [] : [{ kind: 'words', words: unwrapped.rest, via: program }];
    }
  }
}

/** Skips a wrapper's options, operands and assignments; undefined when it runs no command. */
function unwrap(args: readonly ShellWord[], wrapper: Wrapper): { rest: readonly ShellWord[]; options: { name: string; value: ShellWord | undefined }[] } | undefined {
  const options: { name: string; value: ShellWord | undefined }[] = [];
  let index = 0;
  while (index < args.length) {
    const value = args[index]?.value;
    if (value === undefined || !value.startsWith('-') || value === '-') break;
    index += 1;
    if (value === '--') break;
    const equals = value.startsWith('--') ? value.indexOf('=') : -1;
    const name = equals > 0 ? value.slice(0, equals) : value;
    if (wrapper.noCommandFlags?.includes(name)) return undefined;
    const short = name.slice(0, 2);
    if (equals > 0) {
      options.push({ name, value: literalWord(value.slice(equals + 1)) });
    } else if (!name.startsWith('--') && name.length > 2 && wrapper.valueOptions.includes(short)) {
      // A value written onto a short option: `-I{}`, `-uroot`, `-n10`.
      options.push({ name: short, value: literalWord(name.slice(2)) });
    } else if (wrapper.valueOptions.includes(name)) {
      options.push({ name, value: args[index] });
      index += 1;
    } else {
      options.push({ name, value: undefined });
    }
  }
  index += wrapper.leadingOperands ?? 0;
  if (wrapper.assignments) while (index < args.length && isAssignment(args[index]?.value)) index += 1;
  return { rest: args.slice(index), options };
}

function isAssignment(value: string | undefined): boolean {
  if (value === undefined) return false;
  const equals = value.indexOf('=');
  if (equals < 1) return false;
  const name = value.slice(0, equals);
  return [...name].every((character, position) => character === '_' || (character >= 'A' && character <= 'Z') || (character >= 'a' && character <= 'z') || (position > 0 && character >= '0' && character <= '9'));
}

/** `bash -c 'script'`, `sh -ec "..."`: the first operand after an option cluster holding `c`. */
function shellString(args: readonly ShellWord[], program: string): Inner[] {
  const { index, runsString } = shellOptions(args);
  const script = args[index];
  return runsString && script !== undefined ? [{ kind: 'script', script, via: `${program} -c` }] : [];
}

/** `python -m pip install x` runs the module as a program: pip install x. */
function pythonModule(args: readonly ShellWord[], program: string): Inner[] {
  for (let index = 0; index < args.length; index++) {
    const value = args[index]?.value;
    if (value === undefined || value === '-c' || !value.startsWith('-')) return [];
    if (value === '-m') {
      const module = args[index + 1];
      return module === undefined ? [] : [{ kind: 'words', words: args.slice(index + 1), via: `${program} -m` }];
    }
    if (value.startsWith('-m')) return [{ kind: 'words', words: [literalWord(value.slice(2)), ...args.slice(index + 1)], via: `${program} -m` }];
    if (value === '-X' || value === '-W' || value === '-Q') index += 1;
  }
  return [];
}

/**
 * The commands of `find ... -exec CMD {} ;` (and -execdir, -ok, -okdir). `{}`
 * stands for paths found below the first start path, so it becomes
 * `<start>/{}`: below `.` it stays in the workspace, below `/` it does not.
 */
function findExecs(args: readonly ShellWord[]): Inner[] {
  const start = findStartPaths(args)[0] ?? literalWord('.');
  const inners: Inner[] = [];
  for (let index = 0; index < args.length; index++) {
    const action = args[index]?.value;
    if (action !== '-exec' && action !== '-execdir' && action !== '-ok' && action !== '-okdir') continue;
    const words: ShellWord[] = [];
    for (index += 1; index < args.length; index++) {
      const word = args[index] as ShellWord;
      if (word.value === ';' || word.value === '+') break;
      words.push(substituteFound(word, start));
    }
    if (words.length > 0) inners.push({ kind: 'words', words, via: `find ${action}` });
  }
  return inners;
}

function substituteFound(word: ShellWord, start: ShellWord): ShellWord {
  if (word.value === undefined || !word.value.includes('{}')) return word;
  if (start.value === undefined) return dynamicWord(word.text);
  return literalWord(word.value.split('{}').join(`${start.value.replace(/\/+$/, '')}/{}`), word.text);
}

/** `xargs CMD ARGS`: CMD runs with more arguments read from standard input (or with them in place of the -I string). */
function xargsCommand(args: readonly ShellWord[]): Inner[] {
  const unwrapped = unwrap(args, wrappers['xargs'] as Wrapper);
  if (unwrapped === undefined) return [];
  const words = unwrapped.rest.length > 0 ? unwrapped.rest : [literalWord('echo')];
  const replace = unwrapped.options.find((option) => option.name === '-I' || option.name === '--replace' || option.name === '-i');
  const replaced = replace === undefined ? undefined : (replace.value?.value ?? '{}');
  // What xargs reads is data made by another command: a shell given it runs whatever that was.
  const stdin = dynamicWord('(arguments read from standard input)', '', true);
  if (replaced === undefined) return [{ kind: 'words', words: [...words, stdin], via: 'xargs' }];
  return [{ kind: 'words', words: words.map((word) => (word.value?.includes(replaced) ? dynamicWord(word.text, '', true) : word)), via: 'xargs' }];
}

/** `env [-C dir] [-S 'cmd args'] [NAME=value...] CMD`: CMD, run in dir when -C is given. */
function envCommand(args: readonly ShellWord[]): Inner[] {
  const unwrapped = unwrap(args, wrappers['env'] as Wrapper);
  if (unwrapped === undefined) return [];
  const split = unwrapped.options.find((option) => option.name === '-S' || option.name === '--split-string');
  if (split?.value !== undefined) return [{ kind: 'script', script: split.value, via: 'env -S' }];
  const chdir = unwrapped.options.find((option) => option.name === '-C' || option.name === '--chdir')?.value;
  const firstWord = unwrapped.rest.findIndex((word) => !isAssignment(word.value));
  const end = firstWord < 0 ? unwrapped.rest.length : firstWord;
  const words = unwrapped.rest.slice(end);
  const assignments = unwrapped.rest.slice(0, end);
  return [{ kind: 'words', words, via: 'env', assignments, ...(chdir === undefined ? {} : { chdir }) }];
}

/** `eval a b c` evaluates its arguments joined by spaces. */
function joinWords(words: readonly ShellWord[]): ShellWord {
  const text = words.map((word) => word.text).join(' ');
  if (words.every((word) => word.value !== undefined)) return literalWord(words.map((word) => word.value).join(' '), text);
  return dynamicWord(text);
}

/** Variables whose meaning the policy knows without running anything: home is `~`, the current directory is `.`. */
const knownVariables: Readonly<Record<string, string>> = { HOME: '~', PWD: '.' };

/** The value of a word node after quote removal; dynamic when it holds an expansion. */
function resolveWord(node: Node): ShellWord {
  switch (node.type) {
    case 'word':
      return literalWord(unescapeUnquoted(node.text), node.text);
    case 'number':
      return literalWord(node.text);
    case 'raw_string':
      return literalWord(node.text.slice(1, -1), node.text);
    case 'ansi_c_string':
      return literalWord(decodeEscapes(node.text.slice(2, -1)), node.text);
    case 'string':
    case 'translated_string':
      return joinParts(node, node.text.startsWith('$') ? 2 : 1, 1, unescapeDoubleQuoted);
    case 'concatenation':
    case 'command_name':
      return joinParts(node, 0, 0, unescapeUnquoted);
    case 'command_substitution':
    case 'process_substitution':
      return dynamicWord(node.text, '', true);
    case 'simple_expansion':
    case 'expansion': {
      // Only a bare `$HOME`/`${HOME}`: with an operator (`${HOME:-x}`, `${HOME%/*}`) it is something else.
      const [variable, ...rest] = node.namedChildren;
      const known = rest.length === 0 && variable?.type === 'variable_name' && Object.hasOwn(knownVariables, variable.text) ? knownVariables[variable.text] : undefined;
      return known === undefined ? dynamicWord(node.text, '', runsCommand(node)) : literalWord(known, node.text);
    }
    default:
      return dynamicWord(node.text, '', runsCommand(node));
  }
}

/**
 * Joins the parts of a quoted string or a concatenation. The text between
 * named children is literal (tree-sitter folds some of it into the quote
 * tokens), so it is taken from the source by position, skipping `open` and
 * `close` quote characters.
 */
function joinParts(node: Node, open: number, close: number, decode: (text: string) => string): ShellWord {
  const text = node.text;
  const base = node.startIndex;
  const end = text.length - close;
  const parts: ShellWord[] = [];
  let cursor = open;
  for (const child of node.namedChildren) {
    if (child.type === 'string_content') continue;
    // tree-sitter folds blanks before an expansion in a string into its `$` token: they are literal.
    const from = child.startIndex - base + (child.text.length - child.text.trimStart().length);
    if (from > cursor) parts.push(literalWord(decode(text.slice(cursor, from))));
    parts.push(resolveWord(child));
    cursor = child.endIndex - base;
  }
  if (end > cursor) parts.push(literalWord(decode(text.slice(cursor, end))));
  let prefix = '';
  for (const part of parts) {
    if (part.value === undefined) return dynamicWord(text, prefix + part.prefix, parts.some((each) => each.generated === true));
    prefix += part.value;
  }
  return literalWord(prefix, text);
}

/** Outside quotes a backslash keeps the next character literal, and a backslash-newline joins lines. */
function unescapeUnquoted(text: string): string {
  let result = '';
  for (let index = 0; index < text.length; index++) {
    const character = text[index];
    if (character === '\\' && index + 1 < text.length) {
      index += 1;
      if (text[index] !== '\n') result += text[index];
    } else {
      result += character;
    }
  }
  return result;
}

/** Inside double quotes a backslash only escapes `$`, `` ` ``, `"`, `\` and newline. */
function unescapeDoubleQuoted(text: string): string {
  let result = '';
  for (let index = 0; index < text.length; index++) {
    const character = text[index];
    const next = text[index + 1];
    if (character === '\\' && next !== undefined && '$`"\\\n'.includes(next)) {
      index += 1;
      if (next !== '\n') result += next;
    } else {
      result += character;
    }
  }
  return result;
}

/** The file redirections of a redirect node (a heredoc can carry some after its start). */
function resolveRedirects(node: Node): Redirect[] {
  if (node.type === 'heredoc_redirect') return node.childrenForFieldName('redirect').flatMap(resolveRedirects);
  if (node.type !== 'file_redirect') return [];
  const operator = node.children.find((child) => !child.isNamed)?.type;
  const destination = node.childForFieldName('destination');
  return operator === undefined || destination === null ? [] : [{ operator, target: resolveWord(destination) }];
}

function originOf(node: Node): Origin {
  return { text: node.text, line: node.startPosition.row + 1, column: node.startPosition.column + 1 };
}

function positionOf(node: Node, origin: Origin | undefined): { line: number; column: number } {
  return origin ?? { line: node.startPosition.row + 1, column: node.startPosition.column + 1 };
}

function syntaxProblem(error: Node, via: string | undefined, origin: Origin | undefined): ParseProblem {
  // An ERROR node can start with the blanks before the offending text; point past them.
  const blanks = error.text.length - error.text.replace(/^[ \t]+/, '').length;
  const line = error.startPosition.row + 1;
  const column = error.startPosition.column + 1 + blanks;
  const at = `line ${line}, column ${column}`;
  const what = error.isMissing ? `a missing ${JSON.stringify(error.type)}` : `${JSON.stringify(excerpt(error.text.slice(blanks)))}`;
  if (via === undefined || origin === undefined) return { kind: ParseProblemKind.SYNTAX, line, column, message: `the command line is not valid shell at ${at} (near ${what})` };
  return { kind: ParseProblemKind.SYNTAX, line: origin.line, column: origin.column, message: `the script given to ${via} is not valid shell at its ${at} (near ${what})` };
}

function excerpt(text: string): string {
  const firstLine = text.split('\n')[0] ?? '';
  return firstLine.length > maxExcerpt ? `${firstLine.slice(0, maxExcerpt - 3)}...` : firstLine;
}

/** Characters besides letters and digits that need no quoting. */
const plainCharacters = new Set(['_', '.', '/', '=', ':', ',', '@', '%', '+', '-']);

/** An argv word as a shell would need it written, for messages: `ls`, `'a b'`. */
function quoteForShell(value: string): string {
  if (value !== '' && [...value].every((character) => plainCharacters.has(character) || (character >= 'a' && character <= 'z') || (character >= 'A' && character <= 'Z') || (character >= '0' && character <= '9'))) return value;
  return `'${value.split("'").join(`'\\''`)}'`;
}
