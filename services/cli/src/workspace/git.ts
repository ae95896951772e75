import { execFile } from 'node:child_process';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { AppError, ErrorCode } from '@ratchet/errors';
import { parseWorkspacePatch } from './patch';

/** Options of `commitPatchToBranch`. */
export interface CommitPatchOptions {
  /** Environment git runs with; default `process.env`. */
  readonly env?: NodeJS.ProcessEnv;
}

/** The branch `commitPatchToBranch` created. */
export interface BranchCommit {
  /** The branch name, as given. */
  readonly branch: string;
  /** The new commit's id (hex). */
  readonly commit: string;
  /** Its tree's id (hex). */
  readonly tree: string;
}

/** Used only when git knows no identity (user.name/user.email, GIT_* or EMAIL variables): commit-tree would fail otherwise. */
const fallbackIdentity = { name: 'Ratchet', email: 'ratchet@localhost' } as const;

/** Longest a git command may take, ms; these are local plumbing commands that take milliseconds. */
const gitTimeoutMs = 120_000;

/** Most output kept from a git command, bytes; a patch or a tree listing is far smaller. */
const gitMaxOutputBytes = 64 * 1024 * 1024;

interface GitResult {
  readonly exitCode: number;
  readonly stdout: string;
  readonly stderr: string;
}

interface GitRun {
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
}

/**
 * Commits a workspace patch (see `makePatch`) onto a new branch made from
 * HEAD, leaving the working tree, the index and the checked-out branch as
 * they were: the commit is built in a temporary index (read-tree HEAD,
 * apply --cached, write-tree, commit-tree) and only the new branch points at
 * it. The patch was made against the working tree, so every file it touches
 * must equal HEAD's version there (no uncommitted changes to them);
 * otherwise the commit would carry those changes silently, or lose them.
 * Author and committer come from git (config or GIT_* variables); when git
 * knows none, `Ratchet <ratchet@localhost>`.
 *
 * @param dir the workspace directory: the repository's top or a directory inside it (patch paths are relative to it).
 * @param patch the task's unified diff.
 * @param branchName the branch to create, e.g. `ratchet/fix-parser`.
 * @param message the commit message.
 * @throws AppError INVALID_ARGUMENT for a patch that cannot be parsed or
 *   changes nothing, or a branch name git refuses; ALREADY_EXISTS when the
 *   branch exists; FAILED_PRECONDITION when `dir` is missing or not in a git
 *   work tree, git is not installed, HEAD has no commit, a touched file has
 *   uncommitted changes, or the patch does not apply to HEAD; INTERNAL when
 *   another git command fails.
 */
export async function commitPatchToBranch(dir: string, patch: string, branchName: string, message: string, options: CommitPatchOptions = {}): Promise<BranchCommit> {
  const changes = parseWorkspacePatch(patch);
  if (changes.length === 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'the patch changes nothing; there is nothing to commit');
  const env: NodeJS.ProcessEnv = { ...(options.env ?? process.env) };
  const isDirectory = await stat(dir).then((stats) => stats.isDirectory(), () => false);
  if (!isDirectory) throw new AppError(ErrorCode.FAILED_PRECONDITION, `workspace directory ${dir} does not exist`);

  const inside = await runGit(['rev-parse', '--is-inside-work-tree', '--show-toplevel', '--show-prefix'], { cwd: dir, env });
  const [isWorkTree, top, prefix = ''] = inside.stdout.split('\n');
  if (inside.exitCode !== 0 || isWorkTree !== 'true' || top === undefined || top === '') {
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `${dir} is not in a git work tree, so there is no branch to commit to; apply the patch to the directory instead`);
  }
  const run: GitRun = { cwd: top, env };

  if (branchName.startsWith('-') || (await runGit(['check-ref-format', '--branch', branchName], run)).exitCode !== 0) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `${JSON.stringify(branchName)} is not a valid branch name (see git check-ref-format); use a name such as ratchet/fix-parser`);
  }
  if ((await runGit(['rev-parse', '--verify', '--quiet', `refs/heads/${branchName}`], run)).exitCode === 0) {
    throw new AppError(ErrorCode.ALREADY_EXISTS, `branch ${branchName} already exists in ${top}; choose another name or delete it (git branch -D ${branchName})`);
  }
  const headResult = await runGit(['rev-parse', '--verify', '--quiet', 'HEAD^{commit}'], run);
  const head = headResult.stdout.trim();
  if (headResult.exitCode !== 0 || head === '') throw new AppError(ErrorCode.FAILED_PRECONDITION, `${top} has no commit yet (HEAD is unborn); commit once, then try again`);

  // Paths are literal (no globbing), and --no-optional-locks keeps diff from refreshing the user's index.
  const literal = { ...run, env: { ...env, GIT_LITERAL_PATHSPECS: '1' } };
  const paths = changes.map((change) => prefix + change.path);
  const dirty = await runGit(['--no-optional-locks', 'diff', '--name-only', '--no-renames', 'HEAD', '--', ...paths], literal);
  if (dirty.exitCode !== 0) throw gitFailed('diff', dirty);
  const dirtyPaths = dirty.stdout.split('\n').filter((line) => line !== '');
  if (dirtyPaths.length > 0) {
    throw new AppError(
      ErrorCode.FAILED_PRECONDITION,
      `the branch is made from HEAD, but these files the patch touches differ from HEAD in ${dir}: ${dirtyPaths.map((file) => file.slice(prefix.length)).join(', ')}; commit or stash those changes first, or apply the patch to the directory instead`,
    );
  }

  const identity = await identityEnvironment(run);
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'ratchet-index-'));
  try {
    const indexed: GitRun = { cwd: top, env: { ...env, ...identity, GIT_INDEX_FILE: path.join(scratch, 'index') } };
    const readTree = await runGit(['read-tree', head], indexed);
    if (readTree.exitCode !== 0) throw gitFailed('read-tree', readTree);
    const apply = await runGit(['apply', '--cached', '--whitespace=nowarn', ...(prefix === '' ? [] : [`--directory=${prefix.slice(0, -1)}`]), '-'], indexed, patch);
    if (apply.exitCode !== 0) throw new AppError(ErrorCode.FAILED_PRECONDITION, `the patch does not apply to HEAD of ${top}: ${apply.stderr.trim()}`);
    const writeTree = await runGit(['write-tree'], indexed);
    if (writeTree.exitCode !== 0) throw gitFailed('write-tree', writeTree);
    const tree = writeTree.stdout.trim();
    const commitTree = await runGit(['commit-tree', tree, '-p', head, '-F', '-'], indexed, message);
    if (commitTree.exitCode !== 0) throw gitFailed('commit-tree', commitTree);
    const commit = commitTree.stdout.trim();
    const branch = await runGit(['branch', '--no-track', branchName, commit], run);
    if (branch.exitCode !== 0) {
      if (/already exists/i.test(branch.stderr)) throw new AppError(ErrorCode.ALREADY_EXISTS, `branch ${branchName} already exists in ${top}; choose another name`);
      throw gitFailed('branch', branch);
    }
    return { branch: branchName, commit, tree };
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}

/**
 * GIT_AUTHOR_* and GIT_COMMITTER_* for what git has no value of: commit-tree
 * fails without a name and an email, and a bot identity is better than none.
 * What git knows (config, GIT_* variables, EMAIL) is left to git.
 */
async function identityEnvironment(run: GitRun): Promise<Record<string, string>> {
  const configured = async (key: string): Promise<boolean> => (await runGit(['config', '--get', key], run)).stdout.trim() !== '';
  const hasValue = (name: string): boolean => (run.env[name] ?? '') !== '';
  const result: Record<string, string> = {};
  if (!(await configured('user.name'))) {
    if (!hasValue('GIT_AUTHOR_NAME')) result['GIT_AUTHOR_NAME'] = fallbackIdentity.name;
    if (!hasValue('GIT_COMMITTER_NAME')) result['GIT_COMMITTER_NAME'] = fallbackIdentity.name;
  }
  if (!(await configured('user.email')) && !hasValue('EMAIL')) {
    if (!hasValue('GIT_AUTHOR_EMAIL')) result['GIT_AUTHOR_EMAIL'] = fallbackIdentity.email;
    if (!hasValue('GIT_COMMITTER_EMAIL')) result['GIT_COMMITTER_EMAIL'] = fallbackIdentity.email;
  }
  return result;
}

/** Runs git without a shell; a non-zero exit is a result, a git that cannot start is an error. */
function runGit(args: readonly string[], run: GitRun, input?: string): Promise<GitResult> {
  return new Promise((resolve, reject) => {
    const child = execFile('git', [...args], { cwd: run.cwd, env: run.env, encoding: 'utf8', maxBuffer: gitMaxOutputBytes, timeout: gitTimeoutMs, windowsHide: true }, (error, stdout, stderr) => {
      if (error === null) return resolve({ exitCode: 0, stdout, stderr });
      if (typeof error.code === 'number') return resolve({ exitCode: error.code, stdout, stderr });
      if (error.code === 'ENOENT') return reject(new AppError(ErrorCode.FAILED_PRECONDITION, 'git is not installed (or not on PATH); install git to commit the result to a branch', { cause: error }));
      reject(new AppError(ErrorCode.INTERNAL, `git ${args[0] ?? ''} failed: ${error.message}`, { cause: error }));
    });
    // Without input git would wait on an inherited stdin; an empty one ends at once.
    // A git that exits before reading its input (a refused apply) must not crash the CLI with EPIPE.
    child.stdin?.on('error', () => undefined);
    child.stdin?.end(input ?? '');
  });
}

function gitFailed(command: string, result: GitResult): AppError {
  return new AppError(ErrorCode.INTERNAL, `git ${command} failed (exit ${result.exitCode}): ${result.stderr.trim() || result.stdout.trim()}`);
}
