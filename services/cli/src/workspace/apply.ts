import { lstat, realpath } from 'node:fs/promises';
import path from 'node:path';
import type { SourceFile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { collectWorkspace, type CollectedWorkspace } from './collect';
import { FileChangeKind, parseWorkspacePatch, patchedContent, type FilePatch } from './patch';
import { SafeDirectory } from '../safe-write';
import { contentHash } from './rules';
import { defaultWorkspaceSettings, type WorkspaceSettings } from './settings';

/** Options of `applyPatchToDirectory`. */
export interface ApplyPatchOptions {
  /** `fingerprint` of the `collectWorkspace` result the task started from. */
  readonly expectedFingerprint: string;
  /** The `workspace` section the files were collected with; a different one sees other files. Default its defaults. */
  readonly settings?: WorkspaceSettings;
  /** The files sent when the task started; when given, a refusal names every file changed since, not only the patch's. */
  readonly sentFiles?: readonly SourceFile[];
  /** Where the run wrote the patch, named in a refusal so the user can apply it by hand. */
  readonly patchFile?: string;
}

/** What `applyPatchToDirectory` changed, paths relative to the directory, in path order. */
export interface ApplyPatchResult {
  /** Files created or overwritten. */
  readonly written: readonly string[];
  /** Files removed. */
  readonly deleted: readonly string[];
  /** Files of the patch that were not applied, and why: files that were not sent (ignored, secret, too large) are never written. */
  readonly leftOut: readonly { readonly path: string; readonly reason: string }[];
}

interface PlannedChange {
  readonly path: string;
  /** undefined deletes the file. */
  readonly content: string | undefined;
}

/** Most changed files a refusal names; the rest are counted. */
const namedInMessage = 10;

/**
 * Applies a workspace patch (see `makePatch`) to `dir`, which must still hold
 * exactly what was sent: it is collected again and its fingerprint compared,
 * so edits the user made while the task ran are never overwritten.
 *
 * Nothing is written outside `dir` (see `SafeDirectory`): every directory
 * on the way is opened from the one above it without following links, a
 * component or target that is a symlink is refused, and each file is
 * written to a temporary file and renamed over the target; an overwritten
 * file keeps its permission bits.
 * Directories a deletion leaves empty are removed, as `git apply` does.
 * A change to a file that was not sent (an ignored file such as a
 * build-generated module, a secret, an oversized file) is left out and
 * named in the result; the rest of the patch is applied.
 * Every check runs before the first write; the writes themselves are not
 * one transaction (a disk error midway leaves the files before it written,
 * and the error lists them).
 *
 * @param dir the workspace directory the task was started on.
 * @param patch the task's unified diff.
 * @throws AppError INVALID_ARGUMENT when `patch` cannot be parsed (see
 *   `parseWorkspacePatch`); FAILED_PRECONDITION when `dir` changed since the
 *   task started (the message names the files and says to re-run or apply
 *   the patch file by hand), when the patch does not fit a file, or when a
 *   target is a symlink or lies outside `dir`;
 *   whatever `collectWorkspace` throws; INTERNAL when a write fails.
 */
export async function applyPatchToDirectory(dir: string, patch: string, options: ApplyPatchOptions): Promise<ApplyPatchResult> {
  const changes = parseWorkspacePatch(patch);
  const settings = options.settings ?? defaultWorkspaceSettings;
  const collected = await collectWorkspace(dir, settings);
  const root = await realpath(dir);
  if (collected.fingerprint !== options.expectedFingerprint) {
    const changed = options.sentFiles !== undefined ? changedSince(options.sentFiles, collected.files) : patchFilesThatNoLongerFit(changes, collected);
    const shown = changed.length === 0 ? 'files the patch does not touch' : listed(changed);
    throw new AppError(
      ErrorCode.FAILED_PRECONDITION,
      `workspace ${dir} changed since the task started (${shown}); nothing was written. Re-run the task on the current files, or apply ${options.patchFile ?? 'the patch file the run wrote'} yourself (git apply)`,
    );
  }

  const contents = new Map(collected.files.map((file) => [file.path, file.content]));
  const planned: PlannedChange[] = [];
  const leftOut: { path: string; reason: string }[] = [];
  for (const change of changes) {
    const current = contents.get(change.path);
    const unsent = current === undefined ? await whyUnsent(root, change, collected) : undefined;
    if (unsent !== undefined) {
      leftOut.push({ path: change.path, reason: unsent });
      continue;
    }
    const content = patchedContent(change, current);
    planned.push({ path: change.path, content: change.kind === FileChangeKind.DELETED ? undefined : content });
  }
  const refuse = (relativePath: string, why: string) => outside(dir, relativePath, why);
  const workspace = (await SafeDirectory.open(root, refuse, false)) as SafeDirectory;
  try {
    for (const change of planned) await workspace.existing(change.path, refuse);

    const written: string[] = [];
    const deleted: string[] = [];
    for (const change of [...planned].sort((left, right) => Number(left.content !== undefined) - Number(right.content !== undefined))) {
      try {
        if (change.content === undefined) {
          if (!(await workspace.deleteFile(change.path, refuse))) throw new AppError(ErrorCode.FAILED_PRECONDITION, `the patch deletes ${change.path}, which no longer exists`);
          deleted.push(change.path);
        } else {
          await workspace.writeFile(change.path, change.content, refuse);
          written.push(change.path);
        }
      } catch (error) {
        const done = [...deleted, ...written];
        const appError = AppError.is(error) ? error : new AppError(ErrorCode.INTERNAL, `cannot write ${change.path}: ${(error as Error).message}`, { cause: error });
        throw new AppError(appError.code, `${appError.message}; ${done.length === 0 ? 'nothing was changed' : `already changed: ${listed(done)}`}`, { cause: error });
      }
    }
    return { written: written.sort(compare), deleted: deleted.sort(compare), leftOut: leftOut.sort((left, right) => compare(left.path, right.path)) };
  } finally {
    await workspace.close();
  }
}

/** Paths whose content differs between what was sent and what is there now, with how. */
function changedSince(sent: readonly SourceFile[], now: readonly SourceFile[]): string[] {
  const before = new Map(sent.map((file) => [file.path, contentHash(file.content)]));
  const after = new Map(now.map((file) => [file.path, contentHash(file.content)]));
  const result: string[] = [];
  for (const [filePath, hash] of before) {
    const current = after.get(filePath);
    if (current === undefined) result.push(`${filePath} removed`);
    else if (current !== hash) result.push(`${filePath} modified`);
  }
  for (const filePath of after.keys()) if (!before.has(filePath)) result.push(`${filePath} added`);
  return result.sort(compare);
}

/** Without the sent files, the patch's own files that no longer fit it are the ones that can be named. */
function patchFilesThatNoLongerFit(changes: readonly FilePatch[], collected: CollectedWorkspace): string[] {
  const contents = new Map(collected.files.map((file) => [file.path, file.content]));
  const result: string[] = [];
  for (const change of changes) {
    try {
      patchedContent(change, contents.get(change.path));
    } catch {
      result.push(change.path);
    }
  }
  return result;
}

/**
 * Why a patched path that was not among the files sent is left alone, or
 * undefined when it is simply new (then it is written like any other).
 * What was not sent stays the user's: a generated or ignored file the
 * sandbox made is never copied over theirs.
 */
async function whyUnsent(root: string, change: FilePatch, collected: CollectedWorkspace): Promise<string | undefined> {
  const skip = collected.skipped.find((entry) => change.path === entry.path || change.path.startsWith(`${entry.path}/`));
  if (skip !== undefined) return `the patch ${verb(change)} it, but ${skip.path} was not sent (${skip.reason})`;
  if (change.kind !== FileChangeKind.ADDED) return undefined; // patchedContent says that the file does not exist.
  const existing = await lstat(path.join(root, change.path)).catch(() => undefined);
  if (existing === undefined) return undefined;
  return `the patch creates it, but the directory already has ${existing.isSymbolicLink() ? 'a symlink' : 'an entry that was not sent (ignored by .gitignore or workspace.alwaysSkip)'} there`;
}

function outside(dir: string, relativePath: string, why: string): AppError {
  return new AppError(ErrorCode.FAILED_PRECONDITION, `refusing to write ${relativePath}: ${why}, and nothing outside ${dir} may be written; remove the link or apply the patch by hand`);
}

function verb(change: FilePatch): string {
  return change.kind === FileChangeKind.ADDED ? 'creates' : change.kind === FileChangeKind.DELETED ? 'deletes' : 'changes';
}

function listed(items: readonly string[]): string {
  const shown = items.slice(0, namedInMessage).join(', ');
  return items.length > namedInMessage ? `${shown} and ${items.length - namedInMessage} more` : shown;
}

function compare(left: string, right: string): number {
  return left < right ? -1 : left > right ? 1 : 0;
}
