import { checkWorkspaceFile, checkWorkspacePath, workspaceFileProblem } from '@ratchet/agent';
import type { SourceFile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { applyPatch, formatPatch, parsePatch, structuredPatch, type StructuredPatch } from 'diff';

/** Lines of unchanged context around each change, as `git diff` shows by default. */
const contextLines = 3;

/** What a patch changes, counted per file and per line. */
export interface PatchSummary {
  /** Files modified in place (neither added nor deleted). */
  readonly changed: number;
  /** Files created. */
  readonly added: number;
  /** Files removed. */
  readonly deleted: number;
  /** Lines added, over all files. */
  readonly insertions: number;
  /** Lines removed, over all files. */
  readonly deletions: number;
}

/** A unified diff of a workspace and its summary. */
export interface WorkspacePatch {
  /** Git-style unified diff (`diff --git a/... b/...`, `/dev/null` for added and deleted files); '' when nothing changed. */
  readonly patch: string;
  readonly summary: PatchSummary;
}

/** How one file changes. */
export const FileChangeKind = {
  ADDED: 'added',
  MODIFIED: 'modified',
  DELETED: 'deleted',
} as const;

export type FileChangeKind = (typeof FileChangeKind)[keyof typeof FileChangeKind];

/** One file's part of a parsed patch. */
export interface FilePatch {
  /** Workspace path (checked with `checkWorkspacePath`), without the `a/`/`b/` prefix. */
  readonly path: string;
  readonly kind: FileChangeKind;
  /** The file's hunks as jsdiff parsed them. */
  readonly structured: StructuredPatch;
}

/**
 * The unified diff that turns `before` into `before` merged with `after`.
 * `after` may hold every file or only the ones a task wrote: a file of
 * `before` missing from `after` is unchanged, and only `deletedPaths`
 * removes files (a deleted path absent from `before` has nothing to remove
 * and is left out). Files identical on both sides are not in the patch.
 * Files appear in path order, each with 3 lines of context.
 *
 * @throws AppError INVALID_ARGUMENT for a path `checkWorkspacePath` refuses
 *   (repository metadata such as `.git/hooks/pre-commit` included), a new or
 *   changed file `checkWorkspaceFile` refuses (a git HEAD), or a path both
 *   in `after` and in `deletedPaths`.
 */
export function makePatch(before: readonly SourceFile[], after: readonly SourceFile[], deletedPaths: readonly string[] = []): WorkspacePatch {
  const old = new Map(before.map((file) => [checkWorkspacePath(file.path, 'the workspace before the task'), file.content]));
  const next = new Map(after.map((file) => [checkWorkspacePath(file.path, 'the workspace after the task'), file.content]));
  const deleted = new Set(deletedPaths.map((deletedPath) => checkWorkspacePath(deletedPath, 'the deleted files')));
  for (const deletedPath of deleted) {
    if (next.has(deletedPath)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${deletedPath} is both written and deleted by the task; a file is either one or the other`);
  }

  const patches: StructuredPatch[] = [];
  const paths = [...new Set([...next.keys(), ...deleted])].sort(compare);
  for (const filePath of paths) {
    const oldContent = old.get(filePath);
    if (deleted.has(filePath)) {
      if (oldContent === undefined) continue;
      patches.push({ ...structuredPatch(`a/${filePath}`, '/dev/null', oldContent, '', undefined, undefined, { context: contextLines }), isGit: true, isDelete: true });
      continue;
    }
    const newContent = next.get(filePath) as string;
    // Content is judged only where the task changes it: a fixture HEAD the workspace already had is the user's.
    if (oldContent !== newContent) checkWorkspaceFile({ path: filePath, content: newContent }, 'the workspace after the task');
    if (oldContent === undefined) {
      patches.push({ ...structuredPatch('/dev/null', `b/${filePath}`, '', newContent, undefined, undefined, { context: contextLines }), isGit: true, isCreate: true });
    } else if (oldContent !== newContent) {
      patches.push({ ...structuredPatch(`a/${filePath}`, `b/${filePath}`, oldContent, newContent, undefined, undefined, { context: contextLines }), isGit: true });
    }
  }
  // formatPatch joins several files with a blank line, which git apply can take for a context line; each file alone ends in '\n'.
  return { patch: patches.map((filePatch) => formatPatch(filePatch)).join(''), summary: summarize(patches) };
}

/**
 * The files a unified diff changes. Accepts what `makePatch` writes and git's
 * own `diff` output for text files.
 *
 * @throws AppError INVALID_ARGUMENT when the text is no unified diff, names a
 *   path `checkWorkspacePath` refuses (repository metadata such as
 *   `.git/hooks/pre-commit` included), makes a file's first line one git
 *   takes for a HEAD (see `workspaceFileProblem`), renames, copies or changes
 *   binary files, or changes the same file twice.
 */
export function parseWorkspacePatch(patch: string): FilePatch[] {
  let parsed: StructuredPatch[];
  try {
    parsed = parsePatch(patch);
  } catch (error) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `the patch is not a unified diff: ${(error as Error).message}`, { cause: error });
  }
  const result: FilePatch[] = [];
  const seen = new Set<string>();
  for (const entry of parsed) {
    if (entry.oldFileName === undefined && entry.newFileName === undefined) {
      if (entry.hunks.length === 0) continue;
      throw new AppError(ErrorCode.INVALID_ARGUMENT, 'the patch has hunks without ---/+++ file names');
    }
    if (entry.isBinary || entry.isRename || entry.isCopy) {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, `the patch ${entry.isBinary ? 'changes a binary file' : entry.isRename ? 'renames a file' : 'copies a file'} (${entry.newFileName ?? entry.oldFileName}); only text changes can be applied`);
    }
    const oldName = entry.oldFileName === '/dev/null' ? undefined : stripPrefix(entry.oldFileName, 'a/');
    const newName = entry.newFileName === '/dev/null' ? undefined : stripPrefix(entry.newFileName, 'b/');
    let kind: FileChangeKind;
    let filePath: string;
    if (entry.isCreate || oldName === undefined) {
      kind = FileChangeKind.ADDED;
      filePath = newName ?? '';
    } else if (entry.isDelete || newName === undefined) {
      kind = FileChangeKind.DELETED;
      filePath = oldName;
    } else {
      if (oldName !== newName) throw new AppError(ErrorCode.INVALID_ARGUMENT, `the patch changes ${oldName} into ${newName}; only changes in place can be applied`);
      kind = FileChangeKind.MODIFIED;
      filePath = newName;
    }
    checkWorkspacePath(filePath, 'the patch');
    if (kind !== FileChangeKind.DELETED) {
      const firstLine = patchedFirstLine(entry);
      const problem = firstLine === undefined ? undefined : workspaceFileProblem(filePath, firstLine);
      if (problem !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `the patch: path ${JSON.stringify(filePath)} ${problem}; such a change is never applied`);
    }
    if (seen.has(filePath)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `the patch changes ${filePath} twice`);
    seen.add(filePath);
    result.push({ path: filePath, kind, structured: entry });
  }
  return result;
}

/**
 * A file's content after its patch: `current` is its content now (undefined
 * when it does not exist). The hunks must match exactly (no fuzz, no line-end
 * conversion): a patch that fits only loosely was made from another version.
 * A deleted file yields ''.
 *
 * @throws AppError FAILED_PRECONDITION when the file exists but the patch
 *   adds it, is missing but the patch changes it, or its lines do not match
 *   the patch's.
 */
export function patchedContent(filePatch: FilePatch, current: string | undefined): string {
  if (filePatch.kind === FileChangeKind.ADDED && current !== undefined) {
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `the patch creates ${filePatch.path}, which already exists`);
  }
  if (filePatch.kind !== FileChangeKind.ADDED && current === undefined) {
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `the patch ${filePatch.kind === FileChangeKind.DELETED ? 'deletes' : 'changes'} ${filePatch.path}, which does not exist`);
  }
  const result = applyPatch(current ?? '', filePatch.structured, { autoConvertLineEndings: false });
  if (result === false || (filePatch.kind === FileChangeKind.DELETED && result !== '')) {
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `the patch does not fit ${filePatch.path}: its lines differ from the ones the patch was made from`);
  }
  return result;
}

/**
 * The first line of a file after its patch when the patch decides it (its
 * first hunk starts at the top), else undefined: the line is then the one
 * the file has now. Enough to tell a file the patch turns into a git HEAD.
 */
function patchedFirstLine(entry: StructuredPatch): string | undefined {
  const first = entry.hunks[0];
  if (first === undefined || first.oldStart > 1) return undefined;
  const line = first.lines.find((hunkLine) => hunkLine.startsWith(' ') || hunkLine.startsWith('+'));
  return line?.slice(1);
}

function summarize(patches: readonly StructuredPatch[]): PatchSummary {
  let insertions = 0;
  let deletions = 0;
  for (const filePatch of patches) {
    for (const hunk of filePatch.hunks) {
      for (const line of hunk.lines) {
        if (line.startsWith('+')) insertions++;
        else if (line.startsWith('-')) deletions++;
      }
    }
  }
  const added = patches.filter((filePatch) => filePatch.isCreate).length;
  const deleted = patches.filter((filePatch) => filePatch.isDelete).length;
  return { changed: patches.length - added - deleted, added, deleted, insertions, deletions };
}

function stripPrefix(name: string | undefined, prefix: string): string | undefined {
  if (name === undefined) return undefined;
  return name.startsWith(prefix) ? name.slice(prefix.length) : name;
}

/** Code-unit order, the same on every machine (localeCompare is not). */
function compare(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}
