import { randomUUID } from 'node:crypto';
import { Language, SandboxDriver, type RunJobRequest, type RunJobResponse, type SandboxJobResult } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { SourceText } from '../domain/analyze';
import { banditCommand, parseBanditReport, type BanditReport } from '../domain/bandit-findings';

/**
 * Where the Bandit job goes: the sandbox runner's RPC client (embedded
 * mode) or a caller of the sandbox job queue (distributed mode) both fit;
 * the same port as the tester's.
 */
export interface SandboxJobs {
  runJob(request: RunJobRequest, options: { deadline: number; signal: AbortSignal }): Promise<RunJobResponse>;
}

/** What one Bandit run is about and how long it may take. */
export interface BanditRun {
  /** The task and iteration the check is for, to name the job; empty and 0 outside a task. */
  readonly taskId: string;
  readonly iteration: number;
  /** Latest end of the run, epoch ms. */
  readonly deadline: number;
  /** Aborts the run (the CheckCode call was given up on). */
  readonly signal: AbortSignal;
}

/** Bandit's findings, or why it did not run. */
export type BanditOutcome = { readonly ran: true; readonly report: BanditReport } | { readonly ran: false; readonly reason: string };

/**
 * What the Bandit job asks of the sandbox beyond its timeout: room for the
 * JSON report (~600 bytes per finding). Memory, processes, CPUs and the work
 * directory are left to the runner's defaults (Bandit needs ~60 MB and one
 * process), so the job takes a sandbox from the runner's warm pool instead
 * of starting its own (~300 ms less on every check).
 */
const banditLimits = { memoryBytes: 0, pids: 0, cpus: 0, outputLimitBytes: 8 * 1024 * 1024, workDirBytes: 0 } as const;

/**
 * Runs Bandit over `files` in one sandbox job (the files in the work
 * directory, `banditCommand` over their paths, no network) and maps its
 * JSON report. Every way the job can fail (no runner, timeout, the image
 * lacks Bandit, a report that does not parse) comes back as a reason, not
 * an exception, so the caller decides whether that fails the check.
 *
 * @throws AppError CANCELLED or DEADLINE_EXCEEDED when `run.signal` aborts:
 *   the caller is gone, so there is no one to tell the reason to.
 */
export async function runBandit(sandbox: SandboxJobs, files: readonly SourceText[], run: BanditRun): Promise<BanditOutcome> {
  const sources = new Map(files.map((file) => [file.path, file.content]));
  const timeoutMs = Math.max(1_000, run.deadline - Date.now());
  let result: SandboxJobResult | undefined;
  try {
    ({ result } = await sandbox.runJob(
      {
        job: {
          jobId: `${subjectToken(run.taskId) || 'check'}-i${run.iteration}-bandit-${randomUUID().slice(0, 8)}`,
          taskId: run.taskId,
          iteration: run.iteration,
          language: Language.LANGUAGE_PYTHON,
          files: files.map((file) => ({ path: file.path, content: file.content })),
          dataFiles: [],
          setupCommand: '',
          commands: [{ name: 'bandit', argv: banditCommand([...sources.keys()]), workingDirectory: '', timeout: undefined }],
          env: {},
          limits: { ...banditLimits, timeout: { seconds: Math.ceil(timeoutMs / 1_000), nanos: 0 } },
          driver: SandboxDriver.SANDBOX_DRIVER_UNSPECIFIED,
          // The runner's image for Python: the sandbox image ships Bandit.
          image: '',
          testReportPath: '',
          protectedPaths: [],
          dependencies: [],
          enqueuedAt: new Date(),
          deadline: new Date(run.deadline),
        },
      },
      { deadline: run.deadline, signal: run.signal },
    ));
  } catch (error) {
    if (run.signal.aborted) throw AppError.is(run.signal.reason) ? run.signal.reason : new AppError(ErrorCode.CANCELLED, 'the safety check was cancelled', { cause: error });
    return { ran: false, reason: `the sandbox job failed (${AppError.from(error).code}: ${firstLine(AppError.from(error).message)})` };
  }
  if (result === undefined) return { ran: false, reason: 'the sandbox runner answered without a result' };
  const problem = resultProblem(result, timeoutMs);
  if (problem !== undefined) return { ran: false, reason: problem };
  try {
    return { ran: true, report: parseBanditReport(Buffer.from(result.stdout).toString('utf8'), sources) };
  } catch (error) {
    return { ran: false, reason: `its report was not Bandit's JSON (${firstLine(error instanceof Error ? error.message : String(error))}); stderr: ${tail(result.stderr)}` };
  }
}

/** Why a finished job has no usable report, or undefined when it has one. Bandit exits 0 (nothing found) or 1 (findings). */
function resultProblem(result: SandboxJobResult, timeoutMs: number): string | undefined {
  if (result.error !== undefined) return `the sandbox could not run it (${result.error.code}: ${firstLine(result.error.message)})`;
  if (result.timedOut) return `it did not finish within ${Math.round(timeoutMs / 1_000)} s; raise code.banditTimeoutSeconds in config/safety.yaml`;
  if (result.oomKilled) return `it ran out of memory (the sandbox runner's default memory limit, sandbox.memoryMb in its config, is too low for it)`;
  if (result.stdoutTruncated) return `its report was larger than ${banditLimits.outputLimitBytes / (1024 * 1024)} MB; check fewer files per call`;
  if (result.exitCode !== 0 && result.exitCode !== 1) {
    const stderr = tail(result.stderr);
    const missing = /No module named bandit/.test(stderr) ? '; the sandbox image has no Bandit: rebuild it with deploy/sandbox/build-image.sh' : '';
    return `it exited with code ${result.exitCode}${missing} (stderr: ${stderr})`;
  }
  return undefined;
}

function subjectToken(text: string): string {
  return text.replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 64);
}

function firstLine(text: string): string {
  return (text.split('\n')[0] ?? '').slice(0, 200);
}

function tail(bytes: Uint8Array): string {
  const text = Buffer.from(bytes).toString('utf8').trim();
  return text === '' ? 'empty' : text.slice(-300).replace(/\s+/g, ' ');
}
