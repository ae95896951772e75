import { constants, type Dirent } from 'node:fs';
import { lstat, open, readdir, readFile, realpath, stat } from 'node:fs/promises';
import path from 'node:path';
import { workspacePathProblem } from '@ratchet/agent';
import type { DataFile, SourceFile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { decodeText, denyList, fingerprintOf, IgnoreRules } from './rules';
import { defaultWorkspaceSettings, howToSet, type WorkspaceSettings } from './settings';

/** A path of the workspace that was not sent, and why. */
export interface SkippedPath {
  /** POSIX path relative to the workspace directory; a directory stands for everything below it. */
  readonly path: string;
  /** Why, for the user: "secret (matches workspace.secretPatterns: .env*)", "symlink", "binary (...)", ... */
  readonly reason: string;
}

/** What `collectWorkspace` found in a directory. */
export interface CollectedWorkspace {
  /** The text files to send, in path order, paths POSIX and relative to the directory. */
  readonly files: readonly SourceFile[];
  /**
   * The files that are not UTF-8 text (fixtures, images, data, other
   * encodings), in path order: they go to the sandbox so the project's tests
   * can read them, never to the model.
   */
  readonly dataFiles: readonly DataFile[];
  /**
   * Files and directories left out that the user may have expected to be
   * sent (secrets, oversized files, symlinks, unreadable entries),
   * in path order. Paths left out by .gitignore or workspace.alwaysSkip are
   * not listed: the user already chose not to share those.
   */
  readonly skipped: readonly SkippedPath[];
  /** sha256 (hex) over the sorted paths and content hashes of `files` and `dataFiles`; see `fingerprintOf`. */
  readonly fingerprint: string;
  /** Whether the directory is inside a git work tree (a `.git` in it or above it). */
  readonly isGitRepository: boolean;
  /** Sum of the sizes of `files` (UTF-8) and `dataFiles`, bytes. */
  readonly totalBytes: number;
}

/** Files read at once: enough to hide disk latency, few enough not to run out of descriptors. */
const readConcurrency = 16;

/**
 * Past this many times workspace.maxFiles the walk stops counting: the error
 * is the same, and `--workspace /` should fail in seconds, not minutes.
 */
const countingFactor = 10;

// O_NOFOLLOW refuses a symlink swapped in after the directory was listed;
// O_NONBLOCK keeps a FIFO swapped in the same way from blocking the open.
const readFlags = constants.O_RDONLY | (constants.O_NOFOLLOW ?? 0) | (constants.O_NONBLOCK ?? 0);

interface Candidate {
  readonly path: string;
  readonly size: number;
}

interface Repository {
  /** The work tree's top directory (real path). */
  readonly top: string;
  /** The workspace directory relative to `top`, '' or ending in '/'. */
  readonly prefix: string;
  /** .git/info/exclude of the repository (may not exist). */
  readonly excludeFile: string;
}

/**
 * Collects the text files of `dir` for a workspace task, reading nothing
 * outside `dir`.
 *
 * Left out without a word: `.git` (always; other version-control metadata
 * such as `.hg` or `CVS` is listed in `skipped`), workspace.alwaysSkip patterns,
 * and what .gitignore files at every level and .git/info/exclude ignore
 * (with git's precedence and negation; a directory inside a repository also
 * honours the .gitignore files above it up to the repository's top; the
 * user's global core.excludesFile is not read). Left out and listed in
 * `skipped`: files matching workspace.secretPatterns, symlinks (never
 * followed, so a link to /etc/passwd or ~/.ssh cannot leak what it points
 * at), files over workspace.maxFileBytes, paths `checkWorkspacePath` would refuse, and
 * entries that cannot be read (EACCES and the like).
 *
 * Files that are not text (see `decodeText`) are collected as data files:
 * the project's tests may need them (fixtures, images, files in another
 * encoding), and only the sandbox sees them.
 *
 * The limits count every file the walk would read, text or not, so an
 * oversized directory is refused before any file is read.
 *
 * @param dir the workspace directory, absolute or relative to the working directory.
 * @param settings the `workspace` config section; default its defaults.
 * @throws AppError NOT_FOUND when `dir` does not exist; INVALID_ARGUMENT when
 *   it is not a directory, or when it holds more than workspace.maxFiles
 *   files or workspace.maxBytes bytes to send (the message names the count,
 *   the limit, the config key and its environment variable);
 *   PERMISSION_DENIED when `dir` itself cannot be read.
 */
export async function collectWorkspace(dir: string, settings: WorkspaceSettings = defaultWorkspaceSettings): Promise<CollectedWorkspace> {
  const root = await workspaceRoot(dir);
  const repository = await findRepository(root);
  const prefix = repository?.prefix ?? '';
  const alwaysSkip = denyList(settings.alwaysSkip, { ignoreCase: false });
  const secrets = denyList(settings.secretPatterns, { ignoreCase: true });
  const skipped: SkippedPath[] = [];
  const candidates: Candidate[] = [];
  const countingCap = settings.maxFiles * countingFactor;
  let candidateBytes = 0;

  const walk = async (relativeDir: string, inherited: IgnoreRules): Promise<void> => {
    const absoluteDir = relativeDir === '' ? root : path.join(root, relativeDir);
    let entries: Dirent[];
    try {
      entries = await readdir(absoluteDir, { withFileTypes: true });
    } catch (error) {
      if (relativeDir === '') throw new AppError(ErrorCode.PERMISSION_DENIED, `workspace directory ${dir} cannot be listed (${errorCode(error) ?? (error as Error).message}); check its permissions`, { cause: error });
      skipped.push({ path: relativeDir, reason: unreadable(error) });
      return;
    }
    let rules = inherited;
    const ignoreFile = entries.find((entry) => entry.name === '.gitignore' && entry.isFile());
    if (ignoreFile !== undefined) {
      const text = await readIgnoreFile(path.join(absoluteDir, ignoreFile.name));
      if (text !== undefined) rules = rules.withFile(prefix + relativeDir, text);
    }
    entries.sort((left, right) => compare(left.name, right.name));
    for (const entry of entries) {
      if (candidates.length > countingCap) return;
      const relative = relativeDir === '' ? entry.name : `${relativeDir}/${entry.name}`;
      const isDirectory = entry.isDirectory();
      // .git holds the repository's config (remote URLs can carry tokens) and no patch may touch it.
      if (entry.name === '.git') continue;
      if (alwaysSkip.match(relative, isDirectory) !== undefined) continue;
      if (rules.ignores(prefix + relative, isDirectory)) continue;
      const problem = workspacePathProblem(relative);
      if (problem !== undefined) {
        skipped.push({ path: relative, reason: `path ${problem}` });
        continue;
      }
      const secret = secrets.match(relative, isDirectory);
      if (secret !== undefined) {
        skipped.push({ path: relative, reason: `secret (matches workspace.secretPatterns: ${secret})` });
        continue;
      }
      if (entry.isSymbolicLink()) {
        skipped.push({ path: relative, reason: 'symlink' });
        continue;
      }
      if (isDirectory) {
        await walk(relative, rules);
        continue;
      }
      if (!entry.isFile()) {
        skipped.push({ path: relative, reason: 'not a regular file' });
        continue;
      }
      let size: number;
      try {
        size = (await lstat(path.join(root, relative))).size;
      } catch (error) {
        skipped.push({ path: relative, reason: unreadable(error) });
        continue;
      }
      if (size > settings.maxFileBytes) {
        skipped.push({ path: relative, reason: tooLarge(size, settings.maxFileBytes) });
        continue;
      }
      candidates.push({ path: relative, size });
      candidateBytes += size;
    }
  };

  let rules = IgnoreRules.empty();
  if (repository !== undefined) rules = await outerIgnoreRules(repository);
  await walk('', rules);

  const capped = candidates.length > countingCap;
  checkLimits(dir, settings, candidates.length, candidateBytes, capped);

  const files: SourceFile[] = [];
  const dataFiles: DataFile[] = [];
  let totalBytes = 0;
  await forEachConcurrently(candidates, readConcurrency, async (candidate) => {
    const result = await readFileOf(path.join(root, candidate.path), settings.maxFileBytes);
    if ('reason' in result) {
      skipped.push({ path: candidate.path, reason: result.reason });
    } else if ('data' in result) {
      dataFiles.push({ path: candidate.path, content: result.data });
      totalBytes += result.data.length;
    } else {
      files.push({ path: candidate.path, content: result.text });
      totalBytes += result.bytes;
    }
  });
  // A file may have grown between the walk and the read.
  checkLimits(dir, settings, files.length + dataFiles.length, totalBytes, false);

  files.sort((left, right) => compare(left.path, right.path));
  dataFiles.sort((left, right) => compare(left.path, right.path));
  skipped.sort((left, right) => compare(left.path, right.path));
  return { files, dataFiles, skipped, fingerprint: fingerprintOf([...files, ...dataFiles]), isGitRepository: repository !== undefined, totalBytes };
}

/** The real path of the workspace directory, after checking that it is one. */
async function workspaceRoot(dir: string): Promise<string> {
  try {
    const stats = await stat(dir);
    if (!stats.isDirectory()) throw new AppError(ErrorCode.INVALID_ARGUMENT, `workspace ${dir} is not a directory; pass the project's directory to --workspace`);
    return await realpath(dir);
  } catch (error) {
    if (AppError.is(error)) throw error;
    const code = errorCode(error);
    if (code === 'ENOENT' || code === 'ENOTDIR') throw new AppError(ErrorCode.NOT_FOUND, `workspace directory ${dir} does not exist; pass the project's directory to --workspace`, { cause: error });
    if (code === 'EACCES' || code === 'EPERM') throw new AppError(ErrorCode.PERMISSION_DENIED, `workspace directory ${dir} cannot be read (${code}); check its permissions`, { cause: error });
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `workspace directory ${dir} cannot be used (${code ?? 'error'}): ${(error as Error).message}`, { cause: error });
  }
}

function checkLimits(dir: string, settings: WorkspaceSettings, files: number, bytes: number, capped: boolean): void {
  const advice = 'list what the task does not need in .gitignore (or workspace.alwaysSkip), point --workspace at a smaller directory, or raise the limit with';
  if (files > settings.maxFiles) {
    throw new AppError(
      ErrorCode.INVALID_ARGUMENT,
      `workspace ${dir} has ${capped ? 'more than ' : ''}${files} files to send, more than workspace.maxFiles allows (${settings.maxFiles}); ${advice} ${howToSet('maxFiles')}`,
    );
  }
  if (bytes > settings.maxBytes) {
    throw new AppError(
      ErrorCode.INVALID_ARGUMENT,
      `workspace ${dir} has ${bytes} bytes (${megabytes(bytes)}) of files to send, more than workspace.maxBytes allows (${settings.maxBytes} bytes, ${megabytes(settings.maxBytes)}); ${advice} ${howToSet('maxBytes')}`,
    );
  }
}

/**
 * The repository `root` is in, if any: the nearest directory at or above it
 * holding a `.git` directory, or a `.git` file (worktrees and submodules point
 * to their git directory with `gitdir: ...`).
 */
async function findRepository(root: string): Promise<Repository | undefined> {
  for (let current = root; ; current = path.dirname(current)) {
    const dotGit = path.join(current, '.git');
    const stats = await lstat(dotGit).catch(() => undefined);
    if (stats?.isDirectory() || stats?.isFile()) {
      const gitDir = stats.isDirectory() ? dotGit : await linkedGitDirectory(dotGit, current);
      const relative = toPosix(path.relative(current, root));
      return { top: current, prefix: relative === '' ? '' : `${relative}/`, excludeFile: path.join(gitDir, 'info', 'exclude') };
    }
    if (path.dirname(current) === current) return undefined;
  }
}

/** The git directory a `.git` file names; info/exclude lives in its common directory. */
async function linkedGitDirectory(dotGitFile: string, top: string): Promise<string> {
  const text = await readFile(dotGitFile, 'utf8').catch(() => '');
  const match = /^gitdir:\s*(.+?)\s*$/m.exec(text);
  if (match?.[1] === undefined) return dotGitFile;
  const gitDir = path.resolve(top, match[1]);
  const common = (await readFile(path.join(gitDir, 'commondir'), 'utf8').catch(() => '')).trim();
  return common === '' ? gitDir : path.resolve(gitDir, common);
}

/** .git/info/exclude, then the .gitignore files from the repository's top down to the workspace's parent. */
async function outerIgnoreRules(repository: Repository): Promise<IgnoreRules> {
  let rules = IgnoreRules.empty();
  const exclude = await readIgnoreFile(repository.excludeFile);
  if (exclude !== undefined) rules = rules.withFile('', exclude);
  const between = repository.prefix === '' ? [] : repository.prefix.slice(0, -1).split('/');
  for (let depth = 0; depth < between.length; depth++) {
    const base = between.slice(0, depth).join('/');
    const text = await readIgnoreFile(path.join(repository.top, ...between.slice(0, depth), '.gitignore'));
    if (text !== undefined) rules = rules.withFile(base, text);
  }
  return rules;
}

/** An ignore file's text, or undefined when it is missing, unreadable or a symlink (git does not follow those either). */
async function readIgnoreFile(file: string): Promise<string | undefined> {
  const handle = await open(file, readFlags).catch(() => undefined);
  if (handle === undefined) return undefined;
  try {
    if (!(await handle.stat()).isFile()) return undefined;
    return await handle.readFile('utf8');
  } catch {
    return undefined;
  } finally {
    await handle.close();
  }
}

/** A file as text when it is UTF-8 text, else as data; or why it could not be read. */
async function readFileOf(file: string, maxFileBytes: number): Promise<{ text: string; bytes: number } | { data: Buffer } | { reason: string }> {
  let handle;
  try {
    handle = await open(file, readFlags);
  } catch (error) {
    return { reason: errorCode(error) === 'ELOOP' ? 'symlink' : unreadable(error) };
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) return { reason: 'not a regular file' };
    if (stats.size > maxFileBytes) return { reason: tooLarge(stats.size, maxFileBytes) };
    const bytes = await handle.readFile();
    if (bytes.length > maxFileBytes) return { reason: tooLarge(bytes.length, maxFileBytes) };
    const decoded = decodeText(bytes);
    return 'text' in decoded ? { text: decoded.text, bytes: bytes.length } : { data: bytes };
  } catch (error) {
    return { reason: unreadable(error) };
  } finally {
    await handle.close();
  }
}

async function forEachConcurrently<T>(items: readonly T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async (): Promise<void> => {
    while (next < items.length) {
      const item = items[next++] as T;
      await work(item);
    }
  };
  await Promise.all(Array.from({ length: Math.min(concurrency, items.length) }, worker));
}

function tooLarge(size: number, limit: number): string {
  return `too large (${size} bytes, more than workspace.maxFileBytes: ${limit}; ${howToSet('maxFileBytes')} raises it)`;
}

function unreadable(error: unknown): string {
  return `unreadable (${errorCode(error) ?? (error as Error).message})`;
}

function errorCode(error: unknown): string | undefined {
  const code = (error as NodeJS.ErrnoException | undefined)?.code;
  return typeof code === 'string' ? code : undefined;
}

function megabytes(bytes: number): string {
  return `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
}

function toPosix(relative: string): string {
  return relative.split(path.sep).join('/');
}

/** Code-unit order, the same on every machine (localeCompare is not). */
function compare(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}
