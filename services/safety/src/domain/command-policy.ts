import { programCode, type CodeSource, type ProgramCode } from './command-code';
import { gitConfigKeys } from './command-git';
import type { ParseProblem, SimpleCommand } from './command-parse';
import { ParseProblemKind } from './command-parse';
import { classifyPath, directoryOf, isRemoteAddress, type PathClass, type Places } from './command-paths';
import { findStartPaths, globMatch, programName, shownWord, splitArguments, valueOptionsOf, wordAfter, type Arguments, type ShellWord } from './command-words';
import { maxSnippetLength, Severity } from './findings';

/** What the policy says about a command: run it, refuse it, or ask a person first. */
export const CommandDecision = { ALLOW: 'allow', ASK: 'ask', DENY: 'deny' } as const;
export type CommandDecision = (typeof CommandDecision)[keyof typeof CommandDecision];

/**
 * One rule of the command policy. Every matcher that is set must hold; a
 * rule with none never matches (the config refuses such rules). Rules are
 * tried in order and the first that matches decides for the command.
 */
export interface CommandRule {
  /** Stable id, `cmd.` and kebab-case; findings carry it. */
  readonly id: string;
  readonly decision: CommandDecision;
  /**
   * Why, one line, for the model and the user. `{program}`, `{command}`
   * (program and matched subcommand, e.g. "git push"), `{target}` (the path
   * or program that matched) and `{arguments}` (the words after the
   * subcommand) are filled in.
   */
  readonly reason: string;
  /** What to do instead. Default: a generic hint per decision. */
  readonly remediation?: string;
  /** Program names (last path segment), `*` matching any run of characters: `mkfs.*`. */
  readonly programs?: readonly string[];
  /** The program is (true) or is not (false) only known at run time (`$X args`, `$(echo rm) -rf /`). */
  readonly dynamicProgram?: boolean;
  /** The first operands, space-separated for several: `push`, `remote add`. Options before them are skipped. */
  readonly subcommands?: readonly string[];
  /** Any of these options is given; short clusters count letter by letter (`-rf` has `-r`). */
  readonly flags?: readonly string[];
  /** Any argument is exactly one of these. */
  readonly args?: readonly string[];
  /** There are (true) or are no (false) operands after the subcommand: `npm install x`, not `npm install`. */
  readonly operands?: boolean;
  /** Any operand after the subcommand points at one of these places. */
  readonly targets?: readonly PathClass[];
  /** Any path the command writes (redirections, `tee`, `cp`/`mv` destinations, `rm` operands...) is in one of these places. */
  readonly writes?: readonly PathClass[];
  /** A later stage of its pipeline runs one of these programs (`curl x | sh`). */
  readonly pipedInto?: readonly string[];
  /** The program is (true) a shell function of the command line that calls itself: a fork bomb. */
  readonly recursiveFunction?: boolean;
  /**
   * The program is a shell or interpreter (sh, bash, python, perl, ruby,
   * node, php, awk, sed, `source`) that gets the code it runs from one of
   * these: a pipe, the output of a command, a variable, inline text...
   */
  readonly codeFrom?: readonly CodeSource[];
  /**
   * Regular expressions (JavaScript syntax, `^`/`$` per line): any of them
   * is found in the code the program is given in the command line
   * (`python3 -c`, `perl -e`, `node -e`, an awk or sed program, a here-doc).
   */
  readonly code?: readonly string[];
  /** git sets one of these configuration keys (`git -c`, `git config`); lowercase, `*` matching any run of characters. */
  readonly gitConfig?: readonly string[];
  /** Some argument, or the value of an option, names another machine (true) or none does (false): a URL, `host:path`, `ext::`. */
  readonly remote?: boolean;
  /** The command runs with one of these variables set (`NAME=value cmd`, `env NAME=value`, `export NAME=value`); `*` matches any run of characters. */
  readonly environment?: readonly string[];
  /** A redirection opens, for reading or writing, a path in one of these places (`< /dev/tcp/host/80`). */
  readonly opens?: readonly PathClass[];
}

/** The command policy: rules, the decision when none matches, the sandbox's layout and the limits of a check. */
export interface CommandPolicy extends Places {
  /** For commands no rule matches. */
  readonly defaultDecision: CommandDecision;
  readonly rules: readonly CommandRule[];
  /** Longest command line checked, characters. */
  readonly maxCommandLineChars: number;
  /** How deep shell strings inside shell strings are followed. */
  readonly maxNestingDepth: number;
}

/** Ids of findings that no configured rule makes; configured rules may not use them. */
export const CommandRuleId = {
  /** The command line is not valid shell; nothing in it runs. */
  PARSE_ERROR: 'cmd.parse-error',
  /** Nested too deep to check. */
  TOO_COMPLEX: 'cmd.too-complex',
  /** No rule matched and the default decision is not allow. */
  DEFAULT: 'cmd.default',
  /** More findings than a response lists. */
  FINDINGS_TRUNCATED: 'cmd.findings-truncated',
} as const;

/** The placeholders a rule's reason may use. */
export const reasonPlaceholders = ['program', 'command', 'target', 'arguments'] as const;

/** One rule match in a command line. */
export interface CommandFinding {
  readonly ruleId: string;
  readonly severity: Severity;
  /** 1-based position of the command in the command line; 0 for argv. */
  readonly line: number;
  readonly column: number;
  /** Why, from the rule's reason. */
  readonly message: string;
  /** The command as written, capped at {@link maxSnippetLength} characters. */
  readonly snippet: string;
  readonly remediation: string;
}

/** The outcome of checking a command line. */
export interface CommandCheck {
  /** The most severe decision of its commands: deny over ask over allow. */
  readonly decision: CommandDecision;
  /** One per command that was denied or asked about, in command-line order. */
  readonly findings: readonly CommandFinding[];
  /** One line for the model and the user: `allowed`, or `denied: ...`/`needs approval: ...` with the first most severe finding. */
  readonly reason: string;
}

/** Most findings in one answer; the decision counts them all. */
export const maxCommandFindings = 50;
/** Longest `{arguments}` filled into a reason, characters. */
const maxArgumentsText = 120;

const severityOf: Readonly<Record<CommandDecision, Severity>> = { allow: Severity.INFO, ask: Severity.MEDIUM, deny: Severity.HIGH };
const rank: Readonly<Record<CommandDecision, number>> = { allow: 0, ask: 1, deny: 2 };
const verb: Readonly<Record<CommandDecision, string>> = { allow: 'allowed', ask: 'needs approval', deny: 'denied' };
const defaultRemediation: Readonly<Record<CommandDecision, string>> = {
  allow: '',
  ask: 'Wait for a person to approve it, or get the job done without it.',
  deny: 'Do the job another way, inside the work directory.',
};

/**
 * The decision for a parsed command line: each command goes through the
 * rules in order and the first match decides for it (the default decision
 * when none does); the command line gets the most severe decision of its
 * commands. `workingDirectory` is where it starts, relative to the work
 * directory ('' for the work directory itself).
 */
export function decideCommands(commands: readonly SimpleCommand[], policy: CommandPolicy, workingDirectory: string): CommandCheck {
  const findings: CommandFinding[] = [];
  const seen = new Set<string>();
  for (const command of commands) {
    const finding = decideCommand(command, policy, workingDirectory);
    if (finding === undefined) continue;
    // The same rule on the same text says nothing new (the three calls of a fork bomb).
    const key = `${finding.ruleId}\u0000${finding.message}\u0000${finding.snippet}`;
    if (seen.has(key)) continue;
    seen.add(key);
    findings.push(finding);
  }
  return summarize(findings);
}

/** The check of a command line that could not be parsed: denied, since what would run is unknown. */
export function problemCheck(problem: ParseProblem, commandLine: string): CommandCheck {
  const tooComplex = problem.kind === ParseProblemKind.TOO_COMPLEX;
  return summarize([
    {
      ruleId: tooComplex ? CommandRuleId.TOO_COMPLEX : CommandRuleId.PARSE_ERROR,
      severity: Severity.HIGH,
      line: problem.line,
      column: problem.column,
      message: problem.message,
      snippet: capSnippet(commandLine),
      remediation: tooComplex
        ? 'Write the commands out flat, or put them in a script file in the work directory and run that file.'
        : 'Fix the shell syntax (quotes, brackets, $(...)) and send the command again; nothing of it ran.',
    },
  ]);
}

function summarize(all: readonly CommandFinding[]): CommandCheck {
  const decision = all.reduce<CommandDecision>((worst, finding) => (rank[decisionOf(finding.severity)] > rank[worst] ? decisionOf(finding.severity) : worst), CommandDecision.ALLOW);
  if (decision === CommandDecision.ALLOW) return { decision, findings: all, reason: verb.allow };
  const first = all.find((finding) => decisionOf(finding.severity) === decision) as CommandFinding;
  const others = all.length - 1;
  const reason = `${verb[decision]}: ${first.message}${others > 0 ? `; and ${others} more finding${others === 1 ? '' : 's'}` : ''}`;
  return { decision, findings: capFindings(all), reason };
}

/** The decision a finding of `severity` stands for: HIGH and above deny, MEDIUM asks, lower allows. */
export function decisionOf(severity: Severity): CommandDecision {
  if (severity === Severity.HIGH || severity === Severity.CRITICAL) return CommandDecision.DENY;
  return severity === Severity.MEDIUM ? CommandDecision.ASK : CommandDecision.ALLOW;
}

function capFindings(findings: readonly CommandFinding[]): CommandFinding[] {
  if (findings.length <= maxCommandFindings) return [...findings];
  // Denials first, so the list never hides why the command line was refused.
  const kept = [...findings].sort((left, right) => rank[decisionOf(right.severity)] - rank[decisionOf(left.severity)]).slice(0, maxCommandFindings - 1);
  const keptSet = new Set(kept);
  return [
    ...findings.filter((finding) => keptSet.has(finding)),
    {
      ruleId: CommandRuleId.FINDINGS_TRUNCATED,
      severity: Severity.INFO,
      line: 0,
      column: 0,
      message: `${findings.length - kept.length} more findings were left out (at most ${maxCommandFindings} are listed); the verdict counts them all`,
      snippet: '',
      remediation: 'Split the command line into shorter ones.',
    },
  ];
}

/** What the matchers and the reason of a rule need about one command, computed once. */
class CommandFacts {
  readonly program: string | undefined;
  readonly args: readonly ShellWord[];
  readonly parsed: Arguments;
  readonly directory: string | undefined;
  private written: readonly ShellWord[] | undefined;
  private codeOf: ProgramCode | undefined | null = null;

  constructor(
    readonly command: SimpleCommand,
    private readonly policy: CommandPolicy,
    workingDirectory: string,
  ) {
    this.program = programName(command.words[0]);
    this.args = command.words.slice(1);
    this.parsed = splitArguments(this.args, valueOptionsOf(this.program));
    this.directory = directoryOf(command.directory, workingDirectory, policy);
  }

  /** How the program is shown: its name, its text when dynamic, or "the redirection" for a statement that only redirects. */
  get shownProgram(): string {
    const word = this.command.words[0];
    return this.program ?? (word === undefined ? 'the redirection' : word.text);
  }

  classify(word: ShellWord): PathClass {
    return classifyPath(word, this.directory, this.policy);
  }

  get writes(): readonly ShellWord[] {
    this.written ??= writtenPaths(this.command, this.program, this.args, this.parsed);
    return this.written;
  }

  /** The code the program runs when it is an interpreter, else undefined. */
  get code(): ProgramCode | undefined {
    if (this.codeOf === null) this.codeOf = programCode(this.program, this.args, this.command.stdin);
    return this.codeOf;
  }

  /** The values that could name another machine: every argument, and the value of `--name=value`. */
  get addresses(): string[] {
    return this.args.flatMap((word) => {
      const value = word.value ?? word.prefix;
      const equals = value.startsWith('-') ? value.indexOf('=') : -1;
      return equals > 0 ? [value, value.slice(equals + 1)] : [value];
    });
  }

  /** `NAME=value` settings the command runs with, including those `export` and its kin make. */
  get variables(): string[] {
    const words = ['export', 'declare', 'typeset', 'readonly', 'local'].includes(this.program ?? '') ? [...this.command.assignments, ...this.args] : this.command.assignments;
    return words.map((word) => word.value ?? word.prefix).filter((value) => value.indexOf('=') > 0 || /^[A-Za-z_][A-Za-z0-9_]*$/.test(value));
  }
}

/** Compiled `code` patterns of the rules, by source. */
const codePatterns = new Map<string, RegExp>();

function codePattern(source: string): RegExp {
  let pattern = codePatterns.get(source);
  if (pattern === undefined) {
    pattern = new RegExp(source, 'm');
    codePatterns.set(source, pattern);
  }
  return pattern;
}

/** A given long option counts as a rule's long option it abbreviates, as getopt_long takes any unambiguous start (`--to-com` is `--to-command`). */
function hasFlag(flags: ReadonlySet<string>, wanted: string): boolean {
  if (flags.has(wanted)) return true;
  if (!wanted.startsWith('--')) return false;
  for (const given of flags) if (given.startsWith('--') && given.length >= 5 && wanted.startsWith(given)) return true;
  return false;
}

/** The finding for one command, or undefined when it is allowed. */
function decideCommand(command: SimpleCommand, policy: CommandPolicy, workingDirectory: string): CommandFinding | undefined {
  const facts = new CommandFacts(command, policy, workingDirectory);
  for (const rule of policy.rules) {
    const details = matchRule(rule, facts);
    if (details === undefined) continue;
    if (rule.decision === CommandDecision.ALLOW) return undefined;
    return findingOf(command, rule.id, rule.decision, render(rule.reason, details), rule.remediation ?? defaultRemediation[rule.decision]);
  }
  // A statement that only redirects runs no program; the rules on writes judged it.
  if (policy.defaultDecision === CommandDecision.ALLOW || command.words.length === 0) return undefined;
  const message = `no rule covers "${facts.shownProgram}", and commands no rule covers are ${policy.defaultDecision === CommandDecision.DENY ? 'denied' : 'asked about'} (commands.defaultDecision)`;
  return findingOf(command, CommandRuleId.DEFAULT, policy.defaultDecision, message, defaultRemediation[policy.defaultDecision]);
}

function findingOf(command: SimpleCommand, ruleId: string, decision: CommandDecision, message: string, remediation: string): CommandFinding {
  return { ruleId, severity: severityOf[decision], line: command.line, column: command.column, message, snippet: capSnippet(command.text), remediation };
}

/** The values filled into a rule's reason. */
type Details = Readonly<Record<(typeof reasonPlaceholders)[number], string>>;

/** The rule's details when every matcher it sets holds for the command, else undefined. */
function matchRule(rule: CommandRule, facts: CommandFacts): Details | undefined {
  const { command, program, parsed } = facts;
  if (rule.programs !== undefined && (program === undefined || !rule.programs.some((pattern) => globMatch(pattern, program)))) return undefined;
  if (rule.dynamicProgram !== undefined && (command.words[0] !== undefined && program === undefined) !== rule.dynamicProgram) return undefined;
  if (rule.recursiveFunction !== undefined && command.recursiveFunction !== rule.recursiveFunction) return undefined;
  let subcommand: string | undefined;
  let operandsFrom = 0;
  if (rule.subcommands !== undefined) {
    subcommand = rule.subcommands.find((candidate) => startsWithWords(parsed, candidate.split(' ').filter((part) => part !== '')));
    if (subcommand === undefined) return undefined;
    operandsFrom = subcommand.split(' ').filter((part) => part !== '').length;
  }
  if (rule.flags !== undefined && !rule.flags.some((flag) => hasFlag(parsed.flags, flag))) return undefined;
  if (rule.args !== undefined && !facts.args.some((word) => word.value !== undefined && rule.args?.includes(word.value))) return undefined;
  const operands = parsed.positionals.slice(operandsFrom);
  if (rule.operands !== undefined && (operands.length > 0) !== rule.operands) return undefined;
  let target = '';
  if (rule.targets !== undefined) {
    const hit = operands.find((operand) => rule.targets?.includes(facts.classify(operand.word)));
    if (hit === undefined) return undefined;
    target = shownWord(hit.word);
  }
  if (rule.writes !== undefined) {
    const hit = facts.writes.find((word) => rule.writes?.includes(facts.classify(word)));
    if (hit === undefined) return undefined;
    target = shownWord(hit);
  }
  if (rule.pipedInto !== undefined) {
    const hit = command.pipedInto.find((later) => rule.pipedInto?.some((pattern) => globMatch(pattern, later)));
    if (hit === undefined) return undefined;
    target = hit;
  }
  if (rule.codeFrom !== undefined) {
    const code = facts.code;
    if (code === undefined || !rule.codeFrom.includes(code.source)) return undefined;
    target = code.source;
  }
  if (rule.code !== undefined) {
    const text = facts.code?.text;
    if (text === undefined) return undefined;
    const found = rule.code.map((source) => codePattern(source).exec(text)).find((match) => match !== null);
    if (found === undefined) return undefined;
    target = excerpt(found[0]);
  }
  if (rule.gitConfig !== undefined) {
    if (program !== 'git') return undefined;
    const key = gitConfigKeys(facts.args).find((candidate) => rule.gitConfig?.some((pattern) => globMatch(pattern, candidate)));
    if (key === undefined) return undefined;
    target = key;
  }
  if (rule.remote !== undefined) {
    const address = facts.addresses.find(isRemoteAddress);
    if ((address !== undefined) !== rule.remote) return undefined;
    if (address !== undefined) target = address;
  }
  if (rule.environment !== undefined) {
    const setting = facts.variables.find((variable) => rule.environment?.some((pattern) => globMatch(pattern, variable.split('=')[0] ?? '')));
    if (setting === undefined) return undefined;
    target = setting.split('=')[0] ?? setting;
  }
  if (rule.opens !== undefined) {
    const hit = command.redirects.find((redirect) => rule.opens?.includes(facts.classify(redirect.target)));
    if (hit === undefined) return undefined;
    target = shownWord(hit.target);
  }
  // The words after the subcommand, as written (options and all): the packages of an install.
  const lastSubcommandWord = operandsFrom > 0 ? (parsed.positionals[operandsFrom - 1]?.index ?? -1) : -1;
  const argumentsText = facts.args
    .slice(lastSubcommandWord + 1)
    .map((word) => word.text)
    .join(' ');
  return {
    program: facts.shownProgram,
    command: subcommand === undefined ? facts.shownProgram : `${facts.shownProgram} ${subcommand}`,
    target,
    arguments: argumentsText.length > maxArgumentsText ? `${argumentsText.slice(0, maxArgumentsText - 3)}...` : argumentsText,
  };
}

function startsWithWords(parsed: Arguments, words: readonly string[]): boolean {
  return words.length > 0 && words.every((word, index) => parsed.positionals[index]?.word.value === word);
}

function render(template: string, details: Details): string {
  let text = template;
  for (const placeholder of reasonPlaceholders) text = text.split(`{${placeholder}}`).join(details[placeholder]);
  return oneLine(text);
}

/** Redirection operators that open their target for writing. */
const writingOperators = new Set(['>', '>>', '>|', '&>', '&>>', '<>']);
/** Programs whose every operand is a path they create, change or delete. */
const operandWriters = new Set(['rm', 'rmdir', 'unlink', 'touch', 'mkdir', 'shred', 'truncate', 'mkfifo', 'mknod', 'tee']);
/** Programs that write their last operand, or the directory of `-t`. */
const destinationWriters = new Set(['cp', 'mv', 'ln', 'install', 'rsync']);

/**
 * The paths a command writes: its output redirections, and what the
 * program is known to write. Reading is never a concern (the sandbox is
 * isolated); writing outside the work directory is.
 */
function writtenPaths(command: SimpleCommand, program: string | undefined, args: readonly ShellWord[], parsed: Arguments): ShellWord[] {
  const written: ShellWord[] = [];
  for (const redirect of command.redirects) {
    // `2>&1` and `>&-` duplicate or close a descriptor; `>& file` writes the file.
    const duplicates = redirect.operator === '>&' && redirect.target.value !== undefined && (redirect.target.value === '-' || isDigits(redirect.target.value));
    if (writingOperators.has(redirect.operator) || (redirect.operator === '>&' && !duplicates)) written.push(redirect.target);
  }
  const positionals = parsed.positionals.map((positional) => positional.word);
  if (program === undefined) return written;
  if (operandWriters.has(program)) {
    written.push(...positionals);
  } else if (destinationWriters.has(program)) {
    const directory = parsed.options.find((option) => option.name === '-t' || option.name === '--target-directory')?.value;
    if (directory !== undefined) written.push(directory);
    else if (program === 'install' && parsed.flags.has('-d')) written.push(...positionals);
    else if (positionals.length >= 2) written.push(positionals[positionals.length - 1] as ShellWord);
  } else if (program === 'chmod' || program === 'chown' || program === 'chgrp') {
    written.push(...(parsed.options.some((option) => option.name === '--reference') ? positionals : positionals.slice(1)));
  } else if (program === 'sed' && (parsed.flags.has('-i') || parsed.flags.has('--in-place'))) {
    const scriptOption = parsed.options.some((option) => ['-e', '--expression', '-f', '--file'].includes(option.name));
    written.push(...(scriptOption ? positionals : positionals.slice(1)));
  } else if (program === 'dd') {
    for (const word of args) if (word.prefix.startsWith('of=')) written.push(wordAfter(word, 3));
  } else if (program === 'tar' && isTarExtract(args, parsed)) {
    const directory = parsed.options.find((option) => option.name === '-C' || option.name === '--directory')?.value;
    written.push(directory ?? { text: '.', value: '.', prefix: '.' });
  } else if (program === 'unzip') {
    const directory = parsed.options.find((option) => option.name === '-d')?.value;
    if (directory !== undefined) written.push(directory);
  } else if (program === 'find' && args.some((word) => word.value === '-delete')) {
    const starts = findStartPaths(args);
    written.push(...(starts.length > 0 ? starts : [{ text: '.', value: '.', prefix: '.' }]));
  }
  return written;
}

/** `tar -x`, `tar --extract`, or the old style `tar xzf a.tgz`. */
function isTarExtract(args: readonly ShellWord[], parsed: Arguments): boolean {
  if (parsed.flags.has('-x') || parsed.flags.has('--extract') || parsed.flags.has('--get')) return true;
  const first = args[0]?.value;
  return first !== undefined && !first.startsWith('-') && first.includes('x');
}

function isDigits(value: string): boolean {
  return value !== '' && [...value].every((character) => character >= '0' && character <= '9');
}

/** Longest piece of matched code shown in a reason, characters. */
const maxCodeExcerpt = 60;

function excerpt(text: string): string {
  const line = oneLine(text).trim();
  return line.length > maxCodeExcerpt ? `${line.slice(0, maxCodeExcerpt - 3)}...` : line;
}

/** The command's text on one line, capped at {@link maxSnippetLength} characters. */
function capSnippet(text: string): string {
  const line = oneLine(text).trim();
  return line.length > maxSnippetLength ? `${line.slice(0, maxSnippetLength - 3)}...` : line;
}

/** Control characters (newlines of a multi-line script) become spaces: a reason is one line. */
function oneLine(text: string): string {
  return [...text].map((character) => (character < ' ' || character === '\u007f' ? ' ' : character)).join('');
}
