import type { SourceFile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';

/** Longest path accepted for a workspace file, in characters. */
const maxPathLength = 255;

/**
 * Checks that `filePath` names a file inside the workspace: relative, with
 * `/` separators, no `.`/`..`/empty segments, no NUL or control characters.
 * Returns the path unchanged.
 *
 * @throws AppError INVALID_ARGUMENT saying what is wrong with the path and
 *   where it came from (`origin`, e.g. "the coder's reply").
 */
export function checkWorkspacePath(filePath: string, origin: string): string {
  const problem = workspacePathProblem(filePath);
  if (problem !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${origin}: path ${JSON.stringify(filePath.slice(0, 300))} ${problem}; use a relative path inside the workspace such as src/app.py`);
  return filePath;
}

/** Why `filePath` is not a valid workspace path, or undefined when it is. */
export function workspacePathProblem(filePath: string): string | undefined {
  if (filePath === '') return 'is empty';
  if (filePath.length > maxPathLength) return `is longer than ${maxPathLength} characters`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(filePath)) return 'contains control characters';
  if (filePath.includes('\\')) return 'contains a backslash';
  if (filePath.startsWith('/') || /^[A-Za-z]:/.test(filePath) || filePath.startsWith('~')) return 'is absolute';
  const segments = filePath.split('/');
  if (segments.some((segment) => segment === '..')) return 'leaves the workspace (..)';
  if (segments.some((segment) => segment === '' || segment === '.')) return 'has an empty or "." segment';
  return undefined;
}

/** Later files replace earlier ones with the same path; the result in path order. */
export function mergeFiles(...groups: readonly (readonly SourceFile[])[]): SourceFile[] {
  const byPath = new Map<string, SourceFile>();
  for (const group of groups) for (const file of group) byPath.set(file.path, file);
  return [...byPath.values()].sort((left, right) => left.path.localeCompare(right.path));
}
