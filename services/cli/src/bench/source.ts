import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import type { SourceFile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';

const run = promisify(execFile);

// A bench task taken from a real project's history (bench/swe): the task
// folder holds only its task.yaml; the project is a snapshot of a git
// repository at the parent of an upstream bug fix, read from a local clone
// at bench time. Nothing of the project is stored in this repository.

/** Where a task's project comes from, as its task.yaml says. */
export interface TaskSource {
  /** GitHub `owner/name`. */
  readonly repo: string;
  /** The snapshot the agent gets: the parent of the fix. */
  readonly commit: string;
  /** The upstream fix: its versions of the hidden test files are the hidden tests; its other changes, the oracle's answer. */
  readonly fix: string;
}

/**
 * The local clone of `repo` under `sourcesDir`: `<owner>+<name>`,
 * `<owner>/<name>` or `<name>`, with or without `.git`, bare or not.
 *
 * @throws AppError FAILED_PRECONDITION naming the clone command when there is none.
 */
export function findClone(sourcesDir: string, repo: string): string {
  const [owner = '', name = ''] = repo.split('/');
  const candidates = [`${owner}+${name}`, path.join(owner, name), name].flatMap((base) => [base, `${base}.git`]).map((base) => path.join(sourcesDir, base));
  const found = candidates.find((candidate) => existsSync(path.join(candidate, 'HEAD')) || existsSync(path.join(candidate, '.git')));
  if (found === undefined) {
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `no clone of ${repo} in ${sourcesDir}; make one: git clone --bare https://github.com/${repo} ${path.join(sourcesDir, `${owner}+${name}`)}`);
  }
  return found;
}

/** Runs git in `clone`; a missing commit says so. */
async function git(clone: string, args: readonly string[]): Promise<string> {
  try {
    const { stdout } = await run('git', ['-C', clone, ...args], { encoding: 'utf8', maxBuffer: 256 * 1024 * 1024 });
    return stdout;
  } catch (error) {
    const stderr = String((error as { stderr?: unknown }).stderr ?? '').trim();
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `git ${args.join(' ')} in ${clone} failed: ${stderr.split('\n')[0] ?? String(error)}; fetch the clone (git -C ${clone} fetch) if a commit is missing`, { cause: error });
  }
}

/**
 * Extracts the tree of `commit` into a new temporary directory (`git
 * archive | tar -x`), for `use`; removed afterwards.
 */
export async function withSnapshot<T>(clone: string, commit: string, use: (dir: string) => Promise<T>): Promise<T> {
  await git(clone, ['rev-parse', '--verify', `${commit}^{commit}`]);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ratchet-bench-source-'));
  try {
    await new Promise<void>((resolve, reject) => {
      const archive = spawn('git', ['-C', clone, 'archive', '--format=tar', commit], { stdio: ['ignore', 'pipe', 'pipe'] });
      const tar = spawn('tar', ['-x', '-C', dir], { stdio: ['pipe', 'ignore', 'pipe'] });
      let errors = '';
      archive.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
      tar.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
      archive.stdout.pipe(tar.stdin);
      archive.on('error', reject);
      tar.on('error', reject);
      tar.on('close', (code) => (code === 0 ? resolve() : reject(new AppError(ErrorCode.FAILED_PRECONDITION, `cannot extract ${commit} of ${clone}: ${errors.trim() || `tar exited ${String(code)}`}`))));
    });
    return await use(dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A file as of `commit`, or undefined when it does not exist there. */
export async function fileAt(clone: string, commit: string, file: string): Promise<SourceFile | undefined> {
  const listed = await git(clone, ['ls-tree', '--name-only', commit, '--', file]);
  if (listed.trim() === '') return undefined;
  return { path: file, content: await git(clone, ['show', `${commit}:${file}`]) };
}

/**
 * The upstream fix as files: every file the fix adds or changes, as of the
 * fix, except `leaveOut` (the hidden tests); and the paths it deletes.
 */
export async function fixFiles(clone: string, source: TaskSource, leaveOut: ReadonlySet<string>): Promise<{ files: SourceFile[]; deleted: string[] }> {
  const changes = (await git(clone, ['diff', '--name-status', '--no-renames', source.commit, source.fix])).split('\n').filter((line) => line.trim() !== '');
  const files: SourceFile[] = [];
  const deleted: string[] = [];
  for (const line of changes) {
    const [status = '', file = ''] = line.split('\t');
    if (leaveOut.has(file)) continue;
    if (status.startsWith('D')) {
      deleted.push(file);
      continue;
    }
    const changed = await fileAt(clone, source.fix, file);
    if (changed !== undefined) files.push(changed);
  }
  return { files, deleted };
}
