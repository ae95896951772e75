import { readdir, readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { isRepositoryMetadata, workspaceFileProblem } from '@ratchet/agent';
import type { SourceFile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { SafeDirectory } from './safe-write';

/** Largest file read from a tests directory, bytes. */
const maxFileBytes = 1_000_000;
/** Most files read from a tests directory. */
const maxFiles = 200;
const skippedDirectories = new Set(['node_modules', '.git', '__pycache__', '.pytest_cache', '.venv', 'venv']);

/**
 * Reads every file under `directory` as workspace files, with paths relative
 * to `directory` placed under `prefix` (e.g. `tests/`), skipping
 * version-control metadata (`.git`, `.hg`, ... see `isRepositoryMetadata`),
 * dependency and cache directories.
 *
 * @throws AppError INVALID_ARGUMENT when the directory is missing, empty, too
 *   big, or holds a non-UTF-8 file.
 */
export async function readDirectoryFiles(directory: string, prefix: string, option = '--tests'): Promise<SourceFile[]> {
  const root = path.resolve(directory);
  const info = await stat(root).catch(() => undefined);
  if (info === undefined || !info.isDirectory()) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${option} ${directory}: not a directory; give a directory of files`);
  const files: SourceFile[] = [];
  const walk = async (current: string): Promise<void> => {
    for (const entry of await readdir(current, { withFileTypes: true })) {
      const full = path.join(current, entry.name);
      if (entry.isDirectory()) {
        if (!skippedDirectories.has(entry.name) && !isRepositoryMetadata(entry.name)) await walk(full);
        continue;
      }
      // A gitfile (.git as a file), Fossil's .fslckout: metadata, never sent as a test.
      if (isRepositoryMetadata(entry.name)) continue;
      if (!entry.isFile()) continue;
      if (files.length >= maxFiles) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${option} ${directory}: more than ${maxFiles} files; point at a smaller directory`);
      const size = (await stat(full)).size;
      if (size > maxFileBytes) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${option}: ${full} is ${size} bytes; files over ${maxFileBytes} bytes are not accepted`);
      const bytes = await readFile(full);
      const content = new TextDecoder('utf-8', { fatal: true }).decode(bytes, { stream: false });
      files.push({ path: `${prefix}${path.relative(root, full).split(path.sep).join('/')}`, content });
    }
  };
  try {
    await walk(root);
  } catch (error) {
    if (error instanceof TypeError) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${option} ${directory}: a file is not UTF-8 text`, { cause: error });
    throw error;
  }
  if (files.length === 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${option} ${directory}: no files found`);
  return files.sort((left, right) => left.path.localeCompare(right.path));
}

/** The file that marks an output directory as holding a failing attempt Ratchet wrote. */
export const failingMarker = 'FAILING.md';

/** What an output directory held when the run started, to tell at the end whether it changed meanwhile. */
export interface OutputDirectoryState {
  /** Device and inode of the directory, undefined when it did not exist. */
  readonly identity: { readonly dev: number; readonly ino: number } | undefined;
  readonly entries: readonly string[];
  readonly force: boolean;
}

/**
 * Refuses an output directory that already has files, so a run never
 * overwrites someone's work; `force` allows it. A directory holding a
 * failing attempt Ratchet wrote (it has FAILING.md) is not someone's work:
 * a resume or a new run may replace it. A symlink given as the directory is
 * refused: files are never written through links.
 *
 * @returns what the directory held, for `writeFiles` at the end of the run.
 * @throws AppError ALREADY_EXISTS naming the directory and the switch;
 *   FAILED_PRECONDITION when it is a symlink or not a directory.
 */
export async function checkOutputDirectory(directory: string, force: boolean): Promise<OutputDirectoryState> {
  const opened = await SafeDirectory.open(directory, outputRefusal(directory), false);
  if (opened === undefined) return { identity: undefined, entries: [], force };
  try {
    const { dev, ino } = await opened.stat();
    const entries = await readdir(opened.entry('.'));
    if (entries.length > 0 && !force && !entries.includes(failingMarker)) {
      throw new AppError(ErrorCode.ALREADY_EXISTS, `output directory ${directory} is not empty; choose another --out or pass --force to overwrite files in it`);
    }
    return { identity: { dev, ino }, entries: entries.sort(), force };
  } finally {
    await opened.close();
  }
}

function outputRefusal(directory: string) {
  return (relativePath: string, why: string) =>
    new AppError(ErrorCode.FAILED_PRECONDITION, `refusing to write ${relativePath === '.' ? directory : `${relativePath} in ${directory}`}: ${why}; files are never written through links or outside the output directory. Remove the link or choose another --out`);
}

/**
 * Writes files under `directory`, creating it and subdirectories, never
 * through a symlink and never outside it (see `SafeDirectory`); each file
 * whole or not at all. Paths are checked again here (see
 * `workspaceFileProblem`): nothing goes into `.git/` or other version-control
 * metadata in any spelling, and no file git would take for a repository's
 * HEAD, so a `git status` in the directory afterwards cannot run a command
 * the task chose. With `expected` (what
 * `checkOutputDirectory` saw when the run started) a directory that was
 * replaced meanwhile, or (without --force) got new entries, is refused.
 * Every check runs before the first write.
 *
 * @throws AppError INVALID_ARGUMENT for a path that would leave the
 *   directory or write repository metadata (nothing is written then); FAILED_PRECONDITION when the directory changed during the run
 *   or a component or target is a symlink or not what it should be (nothing
 *   is written then).
 */
export async function writeFiles(directory: string, files: readonly SourceFile[], expected?: OutputDirectoryState): Promise<string[]> {
  const root = path.resolve(directory);
  for (const file of files) {
    const problem = workspaceFileProblem(file.path, file.content);
    if (problem !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `refusing to write ${JSON.stringify(file.path)}: it ${problem}; nothing was written. Only a task's project files are written, never repository metadata`);
  }
  const refuse = outputRefusal(directory);
  const changed = (what: string) =>
    new AppError(ErrorCode.FAILED_PRECONDITION, `output directory ${directory} changed during the run (${what}); nothing was written. Check what changed, then write the result again with: ratchet watch TASK_ID --out DIR`);
  const existedBefore = expected?.identity !== undefined;
  const opened = await SafeDirectory.open(root, refuse, false);
  if (expected !== undefined && opened === undefined && existedBefore) throw changed('it was removed');
  const output = opened ?? ((await SafeDirectory.open(root, refuse, true)) as SafeDirectory);
  try {
    if (expected !== undefined) {
      const { dev, ino } = await output.stat();
      if (expected.identity !== undefined && (expected.identity.dev !== dev || expected.identity.ino !== ino)) throw changed('it was replaced by another directory');
      // A directory this call created is empty; one that was there may have gained entries (a planted link, say).
      if (!expected.force && opened !== undefined) {
        const added = (await readdir(output.entry('.'))).filter((name) => !expected.entries.includes(name) && name !== failingMarker);
        if (added.length > 0) throw changed(`${added.slice(0, 5).join(', ')} appeared in it`);
      }
    }
    for (const file of files) await output.existing(file.path, refuse);
    const written: string[] = [];
    for (const file of files) {
      await output.writeFile(file.path, file.content, refuse);
      written.push(path.join(root, ...file.path.split('/')));
    }
    return written;
  } finally {
    await output.close();
  }
}
