import { createHash } from 'node:crypto';
import type { DataFile, SourceFile } from '@ratchet/contracts';
import ignore, { type Ignore } from 'ignore';

/**
 * Git matches ignore patterns case-sensitively unless the file system folds
 * case (core.ignorecase, set by `git init` on macOS and Windows); this follows
 * the same default so a workspace sends what `git status` would show.
 */
const gitIgnoresCase = process.platform === 'darwin' || process.platform === 'win32';

/** One ignore file's rules and the directory they are relative to. */
interface IgnoreLevel {
  /** Directory of the rules, relative to the rules' root, '' or ending in '/'. */
  readonly base: string;
  readonly matcher: Ignore;
}

/**
 * The ignore rules in force at one directory: .git/info/exclude, then each
 * .gitignore from the repository's top down to this directory. Git's
 * precedence holds: within a file the last matching line wins, and a deeper
 * file overrides a shallower one (so a nested `!keep.txt` re-includes a file
 * an outer pattern ignored). Immutable: `withFile` returns a new set, so each
 * directory of a walk keeps its own.
 */
export class IgnoreRules {
  private constructor(private readonly levels: readonly IgnoreLevel[]) {}

  /** No rules: nothing is ignored. */
  static empty(): IgnoreRules {
    return new IgnoreRules([]);
  }

  /**
   * These rules plus the lines of one ignore file in `base` (relative to the
   * rules' root, '' for the root itself). Blank and comment lines are fine.
   */
  withFile(base: string, text: string): IgnoreRules {
    const lines = text.split(/\r?\n/);
    if (!lines.some((line) => line.trim() !== '' && !line.startsWith('#'))) return this;
    const normalized = base === '' || base.endsWith('/') ? base : `${base}/`;
    return new IgnoreRules([...this.levels, { base: normalized, matcher: ignore({ ignorecase: gitIgnoresCase }).add(lines) }]);
  }

  /**
   * Whether `relativePath` (from the rules' root, POSIX) is ignored.
   * `isDirectory` matters for patterns ending in `/`.
   */
  ignores(relativePath: string, isDirectory: boolean): boolean {
    let ignored = false;
    for (const level of this.levels) {
      if (!relativePath.startsWith(level.base)) continue;
      const result = level.matcher.test(relativePath.slice(level.base.length) + (isDirectory ? '/' : ''));
      if (result.ignored) ignored = true;
      else if (result.unignored) ignored = false;
    }
    return ignored;
  }
}

/** Gitignore-style deny patterns (workspace.alwaysSkip, workspace.secretPatterns). */
export interface DenyList {
  /** The pattern that matches `relativePath`, or undefined. */
  match(relativePath: string, isDirectory: boolean): string | undefined;
}

/**
 * A deny list of gitignore-style patterns matched at any depth below the
 * workspace root. `ignoreCase` suits credentials: `.ENV` holds the same
 * secrets as `.env` on a case-insensitive file system, and sending one file
 * too few costs less than sending a key.
 */
export function denyList(patterns: readonly string[], options: { ignoreCase: boolean }): DenyList {
  const matcher = ignore({ ignorecase: options.ignoreCase }).add([...patterns]);
  return {
    match(relativePath, isDirectory) {
      const result = matcher.test(relativePath + (isDirectory ? '/' : ''));
      return result.ignored ? (result.rule?.pattern ?? '?') : undefined;
    },
  };
}

/** How many leading bytes are searched for a NUL, as git does to call a file binary. */
export const binarySniffBytes = 8 * 1024;

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * The text of a file, or why it is not text: a NUL byte in the first 8 KB
 * (git's test) or bytes that are not UTF-8 (the contract carries UTF-8 text,
 * and a lossy decode would corrupt the file when the patch is written back).
 * A byte-order mark is kept, so the content round-trips exactly.
 */
export function decodeText(bytes: Uint8Array): { text: string } | { reason: string } {
  if (bytes.subarray(0, binarySniffBytes).includes(0)) return { reason: 'binary (NUL byte in the first 8 KB)' };
  try {
    return { text: utf8.decode(bytes) };
  } catch {
    return { reason: 'binary (not valid UTF-8)' };
  }
}

/** sha256 of a file's content (text as UTF-8, data as it is), hex. */
export function contentHash(content: string | Uint8Array): string {
  return typeof content === 'string' ? createHash('sha256').update(content, 'utf8').digest('hex') : createHash('sha256').update(content).digest('hex');
}

/**
 * sha256 (hex) over the files' sorted paths and content hashes: equal exactly
 * when the same paths hold the same contents, whatever the order given.
 */
export function fingerprintOf(files: readonly (SourceFile | DataFile)[]): string {
  const hash = createHash('sha256');
  const sorted = [...files].sort((left, right) => (left.path < right.path ? -1 : left.path > right.path ? 1 : 0));
  // NUL cannot occur in a workspace path, so the record boundaries are unambiguous.
  for (const file of sorted) hash.update(`${file.path}\0${contentHash(file.content)}\n`, 'utf8');
  return hash.digest('hex');
}
