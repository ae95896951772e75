import type { SourceFile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';

/** Longest path accepted for a workspace file, in characters. */
const maxPathLength = 255;

/**
 * Names of version-control metadata, folded (see `foldName`). Writing any of
 * them lets a reply run commands on the machine of whoever next runs that
 * tool in the directory (git's core.fsmonitor and hooks, Mercurial's and
 * Sapling's [hooks], darcs' prefs/defaults hooks, CVS's Checkin.prog and
 * `:ext:` roots, the `repo` launcher's .repo/repo code), or makes the
 * directory a checkout of a repository the reply chose. None of them is
 * project content; files such as .gitignore, .gitattributes, .gitmodules
 * and .hgignore are, and stay allowed.
 */
const repositoryMetadataNames = new Set([
  // git: a directory, or a file `gitdir: PATH` pointing at one; both make a repository.
  '.git',
  // Mercurial, and Sapling (its own .sl, or .hg in a Mercurial-compatible checkout).
  '.hg',
  '.sl',
  '.svn',
  '.bzr',
  '_darcs',
  // Matched whatever its case, like the others: on macOS and Windows cvs/ is the same directory as CVS/.
  'cvs',
  // Jujutsu keeps its own store here (and a colocated repository also has .git).
  '.jj',
  '.pijul',
  // Fossil's checkout database, a file (_FOSSIL_ on Windows).
  '.fslckout',
  '_fossil_',
  // Google's repo tool runs the Python code under .repo/repo on every command.
  '.repo',
]);

/** 8.3 short names Windows gives the metadata names (`.git` -> `GIT~1`), folded: the first six characters after the leading dots. */
const shortNameStems = new Set([...repositoryMetadataNames].map((name) => name.replace(/^\.+/, '').slice(0, 6)));

/**
 * Code points HFS+ leaves out when it compares names, so `.g\u200cit` is
 * `.git` there (git's is_hfs_dotgit skips the same ones).
 */
const hfsIgnorable = /[\u200c-\u200f\u202a-\u202e\u206a-\u206f\ufeff]/g;

/**
 * One path component as the filesystems that could hold it see it:
 * compatibility-normalised (NFKC turns the long s into s and the Kelvin sign
 * into K) and lower-cased (macOS and Windows ignore case), without the code
 * points HFS+ ignores, without an NTFS stream suffix (`.git::$INDEX_ALLOCATION`
 * opens `.git`) and without the trailing dots and spaces Windows drops.
 */
function foldName(component: string): string {
  let folded = component.normalize('NFKC').replace(hfsIgnorable, '').toLowerCase();
  const stream = folded.indexOf(':');
  if (stream >= 0) folded = folded.slice(0, stream);
  return folded.replace(/[. ]+$/, '');
}

/**
 * The repository metadata `filePath` would write into, or undefined: a
 * component that folds (see `foldName`) to one of `repositoryMetadataNames`,
 * or is a Windows short name of one (`GIT~1`, `HG~2`).
 */
function repositoryMetadataComponent(filePath: string): string | undefined {
  for (const component of filePath.split('/')) {
    const folded = foldName(component);
    if (repositoryMetadataNames.has(folded)) return component;
    const shortName = /^([^.~]{1,6})~[0-9]+$/.exec(folded);
    if (shortName !== null && shortNameStems.has(shortName[1] as string)) return component;
  }
  return undefined;
}

/**
 * Whether `filePath` is or lies inside version-control metadata (see
 * `workspacePathProblem` for the names and spellings), so a walk of the
 * user's own directory can leave it out without a word, as it leaves `.git`.
 */
export function isRepositoryMetadata(filePath: string): boolean {
  return repositoryMetadataComponent(filePath) !== undefined;
}

/** What a workspace path check accepts besides project files. */
export interface WorkspacePathOptions {
  /**
   * Accept paths inside version-control metadata (`.git/HEAD`). Only for
   * reading what is already there, such as the git repository a sandbox
   * session keeps of its own work directory; never for a path something is
   * written to, deleted at or run in. Default false.
   */
  readonly allowRepositoryMetadata?: boolean;
}

/**
 * Checks that `filePath` names a file inside the workspace: relative, with
 * `/` separators, no `.`/`..`/empty segments, no NUL or control characters,
 * and (unless `options.allowRepositoryMetadata`) nothing inside
 * version-control metadata such as `.git/` in any case or spelling a
 * filesystem folds to it (see `workspacePathProblem`). Returns the path
 * unchanged.
 *
 * @throws AppError INVALID_ARGUMENT saying what is wrong with the path and
 *   where it came from (`origin`, e.g. "the coder's reply").
 */
export function checkWorkspacePath(filePath: string, origin: string, options: WorkspacePathOptions = {}): string {
  const problem = workspacePathProblem(filePath, options);
  if (problem !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${origin}: path ${JSON.stringify(filePath.slice(0, 300))} ${problem}; use a relative path inside the workspace such as src/app.py`);
  return filePath;
}

/**
 * Why `filePath` is not a valid workspace path, or undefined when it is.
 * Besides the shape of the path, a component that is version-control
 * metadata is refused unless `options.allowRepositoryMetadata`: `.git` (a
 * directory, or a gitfile pointing at one), `.hg`, `.sl`, `.svn`, `.bzr`,
 * `_darcs`, `CVS`, `.jj`, `.pijul`, `.fslckout`, `_FOSSIL_` and `.repo`, in
 * any case, with trailing dots or spaces, an NTFS stream suffix, HFS+
 * ignorable code points, or as a Windows short name (`GIT~1`). Written
 * there, a file can make the next `git status` run a command.
 */
export function workspacePathProblem(filePath: string, options: WorkspacePathOptions = {}): string | undefined {
  if (filePath === '') return 'is empty';
  if (filePath.length > maxPathLength) return `is longer than ${maxPathLength} characters`;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(filePath)) return 'contains control characters';
  if (filePath.includes('\\')) return 'contains a backslash';
  if (filePath.startsWith('/') || /^[A-Za-z]:/.test(filePath) || filePath.startsWith('~')) return 'is absolute';
  const segments = filePath.split('/');
  if (segments.some((segment) => segment === '..')) return 'leaves the workspace (..)';
  if (segments.some((segment) => segment === '' || segment === '.')) return 'has an empty or "." segment';
  if (options.allowRepositoryMetadata !== true) {
    const metadata = repositoryMetadataComponent(filePath);
    if (metadata !== undefined) return `is inside version-control metadata (${JSON.stringify(metadata)}), which only the user's own tools may write`;
  }
  return undefined;
}

/**
 * Why a file with this path and content must not be written into a
 * workspace, or undefined: `workspacePathProblem`, or a file named HEAD (in
 * any case) whose content git takes for a repository's HEAD (`ref: refs/...`
 * or an object id). Next to an objects/ and a refs/ directory such a file
 * makes its directory a bare repository, whose config git reads (and whose
 * core.pager or core.fsmonitor it runs) for a command run anywhere below it.
 */
export function workspaceFileProblem(filePath: string, content: string): string | undefined {
  const problem = workspacePathProblem(filePath);
  if (problem !== undefined) return problem;
  if (foldName(filePath.slice(filePath.lastIndexOf('/') + 1)) === 'head' && looksLikeGitHead(content)) {
    return "is a git HEAD (it starts with 'ref: refs/' or an object id), which would make its directory a git repository";
  }
  return undefined;
}

/**
 * Checks a file with `workspaceFileProblem`; returns the file unchanged.
 *
 * @throws AppError INVALID_ARGUMENT saying what is wrong and where the file came from (`origin`).
 */
export function checkWorkspaceFile<File extends { readonly path: string; readonly content: string }>(file: File, origin: string): File {
  const problem = workspaceFileProblem(file.path, file.content);
  if (problem !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `${origin}: path ${JSON.stringify(file.path.slice(0, 300))} ${problem}; use a relative path inside the workspace such as src/app.py`);
  return file;
}

/** What git's validate_headref accepts: `ref:`, spaces, `refs/`; or 40 hex digits (the first 40 of a longer id too). */
function looksLikeGitHead(content: string): boolean {
  return /^ref:\s*refs\//.test(content) || /^[0-9a-fA-F]{40}/.test(content);
}

/** Later files replace earlier ones with the same path; the result in path order. */
export function mergeFiles(...groups: readonly (readonly SourceFile[])[]): SourceFile[] {
  const byPath = new Map<string, SourceFile>();
  for (const group of groups) for (const file of group) byPath.set(file.path, file);
  return [...byPath.values()].sort((left, right) => left.path.localeCompare(right.path));
}
