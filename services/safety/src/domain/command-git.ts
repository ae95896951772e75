import type { ShellWord } from './command-words';

/** git's own options before the subcommand that take the next word as their value. */
const globalValueOptions = new Set(['-C', '-c', '--git-dir', '--work-tree', '--namespace', '--super-prefix', '--config-env', '--list-cmds', '--attr-source']);
/** `git config` options that take a value. */
const configValueOptions = new Set(['-f', '--file', '--blob', '--type', '--default', '--comment', '--value', '--url']);
/** `git config` options with which it reads or removes rather than sets. */
const configReading = new Set(['--get', '--get-all', '--get-regexp', '--get-urlmatch', '--get-color', '--get-colorbool', '-l', '--list', '--unset', '--unset-all', '--rename-section', '--remove-section', '-e', '--edit', '--show-origin', '--show-scope', '--name-only']);
/** New-style `git config` subcommands that read or remove. */
const configReadingActions = new Set(['get', 'list', 'unset', 'rename-section', 'remove-section', 'edit']);

/**
 * The configuration keys a git command sets, lowercased (git compares
 * section and key names ignoring case): `git -c KEY=VALUE ...`,
 * `git --config-env=KEY=VAR ...`, and `git config [--global] KEY VALUE`,
 * `git config set KEY VALUE`, `git config --add KEY VALUE`. A key only
 * known at run time is given as `?`, which no pattern but `*` matches.
 */
export function gitConfigKeys(args: readonly ShellWord[]): string[] {
  const keys: string[] = [];
  let index = 0;
  for (; index < args.length; index++) {
    const value = args[index]?.value;
    if (value === undefined || !value.startsWith('-')) break;
    const equals = value.startsWith('--') ? value.indexOf('=') : -1;
    const name = equals > 0 ? value.slice(0, equals) : value;
    const given = equals > 0 ? value.slice(equals + 1) : globalValueOptions.has(name) ? args[++index] : undefined;
    if (name !== '-c' && name !== '--config-env') continue;
    const setting = typeof given === 'string' ? given : given?.value ?? given?.prefix;
    keys.push(keyOf(setting));
  }
  if (args[index]?.value !== 'config') return keys;
  const positionals: (string | undefined)[] = [];
  let reading = false;
  let adding = false;
  for (index += 1; index < args.length; index++) {
    const value = args[index]?.value;
    if (value === undefined || !value.startsWith('-')) {
      positionals.push(value);
      continue;
    }
    const name = value.startsWith('--') && value.includes('=') ? value.slice(0, value.indexOf('=')) : value;
    if (configReading.has(name)) reading = true;
    if (name === '--add' || name === '--replace-all') adding = true;
    if (configValueOptions.has(name) && !value.includes('=')) index += 1;
  }
  if (reading) return keys;
  if (positionals[0] === 'set') return [...keys, keyOf(positionals[1])];
  if (positionals[0] !== undefined && configReadingActions.has(positionals[0])) return keys;
  if (positionals.length >= 2 || (adding && positionals.length >= 1)) keys.push(keyOf(positionals[0]));
  return keys;
}

/** The key of `KEY=VALUE` (or of `KEY`), lowercased; `?` when unknown. */
function keyOf(setting: string | undefined): string {
  if (setting === undefined || setting === '') return '?';
  const equals = setting.indexOf('=');
  return (equals < 0 ? setting : setting.slice(0, equals)).toLowerCase();
}
