import { workspacePathProblem } from '@ratchet/agent';
import type { SandboxJob, SandboxLimits } from '@ratchet/contracts';
import { bytesOf, type WorkFile } from './work-files';
import { AppError, ErrorCode } from '@ratchet/errors';
import { msOf } from '@ratchet/agent';

/** Limits of a job, in plain units, after defaults and maxima. */
export interface EffectiveLimits {
  readonly memoryBytes: number;
  readonly pids: number;
  readonly cpus: number;
  readonly timeoutMs: number;
  readonly outputLimitBytes: number;
  readonly workDirBytes: number;
}

export const defaultLimits: EffectiveLimits = {
  memoryBytes: 512 * 1024 * 1024,
  pids: 128,
  cpus: 1,
  timeoutMs: 120_000,
  outputLimitBytes: 256 * 1024,
  workDirBytes: 64 * 1024 * 1024,
};

export const maximumLimits: EffectiveLimits = {
  memoryBytes: 4 * 1024 * 1024 * 1024,
  pids: 1024,
  cpus: 4,
  timeoutMs: 3_600_000,
  outputLimitBytes: 16 * 1024 * 1024,
  workDirBytes: 1024 * 1024 * 1024,
};

/**
 * Most files in a job or a session: a workspace task's test run carries the
 * whole workspace, which the CLI caps at 20,000 files (workspace.maxFiles).
 */
export const maxSandboxFiles = 20_000;

/**
 * Checks what a job or a session puts in a sandbox: at most `maxFiles`
 * files, each path inside the work directory, all of them fitting its work
 * directory, limits within the maxima, valid environment variable names.
 *
 * @throws AppError INVALID_ARGUMENT naming the field and the allowed range.
 */
export function validateSandboxInput(
  files: readonly WorkFile[],
  env: Readonly<Record<string, string>>,
  limits: EffectiveLimits,
  options: { readonly maxFiles: number; readonly what: string; readonly maxima?: EffectiveLimits },
): void {
  const maxima = options.maxima ?? maximumLimits;
  if (files.length > options.maxFiles) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `the ${options.what} has ${files.length} files; a runner takes at most ${options.maxFiles}`);
  }
  let total = 0;
  for (const file of files) {
    const problem = workspacePathProblem(file.path);
    if (problem !== undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, `files: path ${JSON.stringify(file.path.slice(0, 300))} ${problem}; paths are relative to the work directory`);
    total += typeof file.content === 'string' ? Buffer.byteLength(file.content, 'utf8') : bytesOf(file).length;
  }
  if (total > limits.workDirBytes) throw new AppError(ErrorCode.INVALID_ARGUMENT, `the ${options.what}'s files take ${total} bytes, more than its work directory (${limits.workDirBytes} bytes); raise limits.work_dir_bytes`);
  for (const key of Object.keys(limits) as (keyof EffectiveLimits)[]) {
    if (limits[key] > maxima[key]) throw new AppError(ErrorCode.INVALID_ARGUMENT, `limits.${key} is ${limits[key]}; this runner allows at most ${maxima[key]}`);
  }
  for (const name of Object.keys(env)) {
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `env: ${JSON.stringify(name)} is not a valid variable name`);
  }
}

/** A job's limits with unset (0) values taken from `defaults`. */
export function effectiveLimits(limits: SandboxLimits | undefined, defaults: EffectiveLimits = defaultLimits): EffectiveLimits {
  const timeoutMs = msOf(limits?.timeout);
  return {
    memoryBytes: positive(limits?.memoryBytes) ?? defaults.memoryBytes,
    pids: positive(limits?.pids) ?? defaults.pids,
    cpus: positive(limits?.cpus) ?? defaults.cpus,
    timeoutMs: positive(timeoutMs) ?? defaults.timeoutMs,
    outputLimitBytes: positive(limits?.outputLimitBytes) ?? defaults.outputLimitBytes,
    workDirBytes: positive(limits?.workDirBytes) ?? defaults.workDirBytes,
  };
}

/**
 * Checks a job before any container exists: an id, commands, file paths
 * inside the work directory, limits within the maxima.
 *
 * @throws AppError INVALID_ARGUMENT naming the field and the allowed range.
 */
export function validateJob(job: SandboxJob, limits: EffectiveLimits, maxima: EffectiveLimits = maximumLimits): void {
  if (!/^[\w.-]{1,128}$/.test(job.jobId)) throw new AppError(ErrorCode.INVALID_ARGUMENT, `job_id ${JSON.stringify(job.jobId)} must be 1-128 letters, digits, '.', '_' or '-'`);
  if (job.commands.length === 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'commands is empty; a job runs at least one command');
  for (const command of job.commands) {
    if (command.argv.length === 0 || command.argv[0] === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, `command ${command.name || '(unnamed)'} has no argv`);
    if (command.workingDirectory !== '' && workspacePathProblem(command.workingDirectory) !== undefined) {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, `command ${command.name}: working_directory ${JSON.stringify(command.workingDirectory)} must be a relative path inside the work directory`);
    }
  }
  validateSandboxInput([...job.files, ...job.dataFiles], job.env, limits, { maxFiles: maxSandboxFiles, what: 'job', maxima });
}

function positive(value: number | undefined): number | undefined {
  return value !== undefined && value > 0 ? value : undefined;
}

/**
 * Whether a job with `limits` may run in a sandbox the warm pool started
 * with `pooled` (the pool's defaults): what the sandbox was made with
 * (memory, processes, CPUs, the work directory's size) must match. The
 * timeout and the output cap are the job's own, set when it is sent
 * (`SupervisorSession.capOutput`), so they never keep a job out of the pool.
 */
export function samePoolLimits(limits: EffectiveLimits, pooled: EffectiveLimits): boolean {
  return limits.memoryBytes === pooled.memoryBytes && limits.pids === pooled.pids && limits.cpus === pooled.cpus && limits.workDirBytes === pooled.workDirBytes;
}

/** Inodes of a tmpfs of `bytes`: one per KiB, at least 4096, so empty files cannot fill the kernel's memory instead. */
export function tmpfsInodes(bytes: number): number {
  return Math.max(4096, Math.floor(bytes / 1024));
}
