import path from 'node:path';
import type { ShellWord } from './command-words';

/** Where a path a command names points, as the command policy sees it. */
export const PathClass = {
  /** `/` itself or everything in it (`/*`). */
  ROOT: 'root',
  /** The work directory itself or everything in it (`.`, `*`, `./*`, `/work`). */
  WORKSPACE_ROOT: 'workspace-root',
  /** Something below the work directory. */
  WORKSPACE: 'workspace',
  /** Private to the sandbox and harmless: the scratch directories (/tmp) and /dev/null, the standard streams and the like. */
  SCRATCH: 'scratch',
  /** Any other device under /dev (a disk). */
  DEVICE: 'device',
  /** A connection bash opens for a redirection: /dev/tcp/HOST/PORT, /dev/udp/HOST/PORT. */
  NETWORK: 'network',
  /** Anywhere else: `/etc/x`, `~/x`, `../x`. */
  OUTSIDE: 'outside',
  /** Only known at run time (`$DIR/x`), or relative to a directory a `cd` made unknown. */
  DYNAMIC: 'dynamic',
} as const;
export type PathClass = (typeof PathClass)[keyof typeof PathClass];

/** The sandbox's layout, from the policy. */
export interface Places {
  /** Absolute path of the work directory in the sandbox, e.g. /work. */
  readonly workDirectory: string;
  /** Absolute directories private to the sandbox, e.g. /tmp. */
  readonly scratchDirectories: readonly string[];
}

/**
 * Stands for the home directory, wherever it is: no policy place is under
 * it, so everything below `~` counts as outside.
 */
const home = '/~';

/** Devices that writing to changes nothing that persists. */
const harmlessDevices = new Set(['/dev/null', '/dev/zero', '/dev/full', '/dev/random', '/dev/urandom', '/dev/stdin', '/dev/stdout', '/dev/stderr', '/dev/tty']);

/**
 * The absolute directory a command runs in: the request's working directory
 * (relative to the work directory) followed by the `cd`s before the command
 * (SimpleCommand.directory). Undefined when a `cd` went somewhere unknown.
 */
export function directoryOf(commandDirectory: string | undefined, workingDirectory: string, places: Places): string | undefined {
  const start = path.posix.join(places.workDirectory, workingDirectory);
  return commandDirectory === undefined ? undefined : toAbsolute(commandDirectory, start);
}

/**
 * Where a path a command names points when it runs in `directory` (absolute,
 * or undefined when unknown). A dynamic word is judged by its literal start
 * when that is absolute: `/etc/$X` is outside, `/work/$X` is dynamic (the
 * rest could climb out with `..`).
 */
export function classifyPath(word: ShellWord, directory: string | undefined, places: Places): PathClass {
  if (word.value !== undefined) {
    if (!isRooted(word.value) && directory === undefined) return PathClass.DYNAMIC;
    return classifyAbsolute(toAbsolute(word.value, directory ?? '/'), places);
  }
  if (!isRooted(word.prefix)) return PathClass.DYNAMIC;
  const lastSlash = word.prefix.lastIndexOf('/');
  // `~$USER`: somebody's home.
  if (lastSlash < 0) return PathClass.OUTSIDE;
  const known = classifyAbsolute(toAbsolute(`${word.prefix.slice(0, lastSlash + 1)}x`, '/'), places);
  return known === PathClass.WORKSPACE || known === PathClass.SCRATCH ? PathClass.DYNAMIC : known;
}

function isRooted(value: string): boolean {
  return value.startsWith('/') || value.startsWith('~');
}

/** `value` made absolute against `directory`, with `~` (and `~user`) as {@link home}, normalised. */
function toAbsolute(value: string, directory: string): string {
  if (value === '') return directory;
  if (value.startsWith('~')) {
    const slash = value.indexOf('/');
    return path.posix.normalize(home + (slash < 0 ? '' : value.slice(slash)));
  }
  return path.posix.resolve(directory, value);
}

/** A last segment that matches every entry of its directory: `*`, `.*`, `*.*`, `**`. */
function isEverything(segment: string): boolean {
  return segment.includes('*') && [...segment].every((character) => character === '*' || character === '?' || character === '.');
}

function classifyAbsolute(absolute: string, places: Places): PathClass {
  if (harmlessDevices.has(absolute) || absolute.startsWith('/dev/fd/') || absolute.startsWith('/proc/self/fd/')) return PathClass.SCRATCH;
  const target = isEverything(path.posix.basename(absolute)) ? path.posix.dirname(absolute) : absolute;
  if (isBelow(target, '/dev/tcp') || isBelow(target, '/dev/udp')) return PathClass.NETWORK;
  if (target === '/dev' || isBelow(target, '/dev')) return PathClass.DEVICE;
  if (target === '/') return PathClass.ROOT;
  const work = cleanDirectory(places.workDirectory);
  if (target === work) return PathClass.WORKSPACE_ROOT;
  if (isBelow(target, work)) return PathClass.WORKSPACE;
  if (places.scratchDirectories.map(cleanDirectory).some((scratch) => target === scratch || isBelow(target, scratch))) return PathClass.SCRATCH;
  return PathClass.OUTSIDE;
}

/** `/tmp/` and `/tmp/.` are /tmp. */
function cleanDirectory(directory: string): string {
  const normalized = path.posix.normalize(directory);
  return normalized.length > 1 && normalized.endsWith('/') ? normalized.slice(0, -1) : normalized;
}

function isBelow(candidate: string, directory: string): boolean {
  return candidate.startsWith(directory.endsWith('/') ? directory : `${directory}/`);
}

/**
 * True when a value names another machine: a URL (`https://`, `ssh://`,
 * `git+https://`; not `file://`), a git remote-helper address (`ext::`,
 * `fd::`), or an scp-style `[user@]host:path` (`git@github.com:x/y`,
 * `github:user/repo`).
 */
export function isRemoteAddress(value: string): boolean {
  const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):(\/\/|:)/.exec(value);
  if (scheme !== null) return scheme[1]?.toLowerCase() !== 'file';
  return /^([^@/\s:=]+@)?[A-Za-z0-9][A-Za-z0-9._-]+:[^\s]/.test(value) && !value.startsWith('-');
}
