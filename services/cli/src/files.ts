import { mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { workspacePathProblem } from '@ratchet/agent';
import type { SourceFile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';

/** Largest file read from a tests directory, bytes. */
const maxFileBytes = 1_000_000;
/** Most files read from a tests directory. */
const maxFiles = 200;
const skippedDirectories = new Set(['node_modules', '.git', '__pycache__', '.pytest_cache', '.venv', 'venv']);

/**
 * Reads every file under `directory` as workspace files, with paths relative
 * to `directory` placed under `prefix` (e.g. `tests/`), skipping VCS,
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
        if (!skippedDirectories.has(entry.name)) await walk(full);
        continue;
      }
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

/**
 * Refuses an output directory that already has files, so a run never
 * overwrites someone's work; `force` allows it. A directory holding a
 * failing attempt Ratchet wrote (it has FAILING.md) is not someone's work:
 * a resume or a new run may replace it.
 *
 * @throws AppError ALREADY_EXISTS naming the directory and the switch.
 */
export async function checkOutputDirectory(directory: string, force: boolean): Promise<void> {
  const entries = await readdir(directory).catch(() => [] as string[]);
  if (entries.length > 0 && !force && !entries.includes(failingMarker)) {
    throw new AppError(ErrorCode.ALREADY_EXISTS, `output directory ${directory} is not empty; choose another --out or pass --force to overwrite files in it`);
  }
}

/**
 * Writes files under `directory`, creating it and subdirectories. Paths are
 * checked again here: a path that would leave the directory is refused.
 *
 * @throws AppError INVALID_ARGUMENT for such a path (nothing is written then).
 */
export async function writeFiles(directory: string, files: readonly SourceFile[]): Promise<string[]> {
  const root = path.resolve(directory);
  for (const file of files) {
    const problem = workspacePathProblem(file.path);
    if (problem !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `refusing to write ${JSON.stringify(file.path)}: it ${problem}`);
  }
  const written: string[] = [];
  for (const file of files) {
    const target = path.join(root, ...file.path.split('/'));
    await mkdir(path.dirname(target), { recursive: true });
    await writeFile(target, file.content, 'utf8');
    written.push(target);
  }
  return written;
}
