import { createHash } from 'node:crypto';
import { Language, type CommandResult, type SandboxDriver, type SandboxJob, type SandboxJobResult } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { CappedBuffer } from './capped-buffer';
import { durationFromMs } from '@ratchet/agent';
import type { EffectiveLimits } from './job-limits';
import { parseJUnit } from './junit';
import { FrameReader, FrameType, maxCollectBytes, readOutputs, reportEntryName, testConfigNames } from './supervisor-protocol';
import { stripControlSequences } from './terminal-text';

interface CommandEnded {
  readonly exitCode: number;
  readonly signal: number;
  readonly timedOut: boolean;
  readonly durationNs: number;
}

interface DoneInfo {
  readonly error?: string;
  readonly timedOut?: boolean;
  readonly oomKilled?: boolean;
  readonly oomCounter?: boolean;
  readonly sigkilled?: boolean;
  readonly stdoutTruncated?: boolean;
  readonly stderrTruncated?: boolean;
  readonly cpuNs?: number;
  readonly peakMemoryBytes?: number;
  readonly notes?: string[];
  /** The export directory's files were sent (EXPORT frames). */
  readonly exported?: boolean;
}

/**
 * Everything one supervisor said about one job, fed chunk by chunk from its
 * stdout (frames) and stderr (its own diagnostics). The runner caps again
 * what the supervisor already capped, in case the supervisor was subverted.
 */
export class SupervisorSession {
  private readonly reader = new FrameReader();
  private out: CappedBuffer;
  private err: CappedBuffer;
  private readonly diagnostics = new CappedBuffer(16 * 1024);
  private readonly archive = new CappedBuffer(maxCollectBytes + 1024 * 1024);
  readonly started = new Map<number, bigint>();
  readonly ended = new Map<number, CommandEnded>();
  /** How much of stdout (as kept) there was when each command ended: the supervisor sends a command's output before its end. */
  readonly stdoutEnds = new Map<number, number>();
  ready = false;
  done: DoneInfo | undefined;
  private readonly listeners: { ready: (() => void)[]; done: (() => void)[] } = { ready: [], done: [] };
  private sink: ((chunk: Buffer) => void) | undefined;
  private exportSink: ((chunk: Buffer) => void) | undefined;

  constructor(outputLimitBytes: number) {
    this.out = new CappedBuffer(outputLimitBytes);
    this.err = new CappedBuffer(outputLimitBytes);
  }

  /** The commands' stdout as received, capped. */
  get stdout(): CappedBuffer {
    return this.out;
  }

  /** The commands' stderr as received, capped. */
  get stderr(): CappedBuffer {
    return this.err;
  }

  /**
   * Caps stdout and stderr at the job's own output limit: a pooled sandbox
   * was started before its job was known, and a job may ask for more (or
   * less) output than the pool's default.
   *
   * @throws AppError INTERNAL when output already arrived (the cap is for a job not yet sent).
   */
  capOutput(outputLimitBytes: number): void {
    if (this.out.length > 0 || this.err.length > 0) throw new AppError(ErrorCode.INTERNAL, 'the output cap changes only before the job is sent');
    this.out = new CappedBuffer(outputLimitBytes);
    this.err = new CappedBuffer(outputLimitBytes);
  }

  /** Resolves when the supervisor reports it is up. */
  whenReady(): Promise<void> {
    return this.ready ? Promise.resolve() : new Promise((resolve) => this.listeners.ready.push(resolve));
  }

  /** Resolves when the supervisor sent its last frame. */
  whenDone(): Promise<void> {
    return this.done !== undefined ? Promise.resolve() : new Promise((resolve) => this.listeners.done.push(resolve));
  }

  /**
   * From now on every byte of the supervisor's stdout goes to `sink` (a
   * session's channel), starting with any part of a frame already read.
   */
  divert(sink: (chunk: Buffer) => void): void {
    this.sink = sink;
    const rest = this.reader.drain();
    if (rest.length > 0) sink(rest);
  }

  /** EXPORT frames' payloads (an exported directory's tar) go to `sink`; without one they are dropped. */
  onExport(sink: (chunk: Buffer) => void): void {
    this.exportSink = sink;
  }

  /** Bytes from the supervisor's stdout. */
  accept(chunk: Buffer): void {
    if (this.sink !== undefined) return this.sink(chunk);
    if (this.done !== undefined) return;
    for (const frame of this.reader.push(chunk)) {
      if (frame.type === FrameType.STDOUT) this.stdout.write(frame.payload);
      else if (frame.type === FrameType.STDERR) this.stderr.write(frame.payload);
      else if (frame.type === FrameType.TAR) this.archive.write(frame.payload);
      else if (frame.type === FrameType.EXPORT) this.exportSink?.(frame.payload);
      else if (frame.type === FrameType.EVENT) this.onEvent(JSON.parse(frame.payload.toString('utf8')) as Record<string, unknown>);
      else if (frame.type === FrameType.DONE) {
        this.done = JSON.parse(frame.payload.toString('utf8')) as DoneInfo;
        for (const listener of this.listeners.done.splice(0)) listener();
        return;
      }
    }
  }

  /** Bytes from the supervisor's stderr: its own failures (the code's stderr comes framed on stdout). */
  acceptDiagnostics(chunk: Buffer): void {
    this.diagnostics.write(chunk);
  }

  get diagnosticText(): string {
    return this.diagnostics.toBuffer().toString('utf8').trim();
  }

  get outputArchive(): { data: Buffer; truncated: boolean } {
    return { data: this.archive.toBuffer(), truncated: this.archive.truncated };
  }

  private onEvent(event: Record<string, unknown>): void {
    if (event['ready'] === true) {
      this.ready = true;
      for (const listener of this.listeners.ready.splice(0)) listener();
    } else if (typeof event['started'] === 'number') {
      this.started.set(event['started'], BigInt(event['monotonicNs'] as number));
    } else if (typeof event['ended'] === 'number') {
      this.ended.set(event['ended'], event as unknown as CommandEnded);
      this.stdoutEnds.set(event['ended'], this.out.length);
    }
  }
}

export interface RunContext {
  readonly driver: SandboxDriver;
  readonly runnerId: string;
  readonly startedAt: Date;
  /** process.hrtime.bigint() when the runner took the job (CLOCK_MONOTONIC, as the supervisor's clock). */
  readonly takenAtNs: bigint;
  readonly wallMs: number;
  /** The runner's own deadline killed the sandbox (the supervisor did not end the job in time). */
  readonly killedAtDeadline: boolean;
  /** The host saw an OOM kill in the sandbox's cgroup. */
  readonly hostOomKilled?: boolean;
}

/**
 * The job's result from what its supervisor reported. A supervisor that died
 * early (killed or stopped by the code under test) yields a failed result
 * without a report; a supervisor that hit its own error throws.
 *
 * @throws AppError INTERNAL when the supervisor could not set up the job.
 */
export async function resultOf(job: SandboxJob, limits: EffectiveLimits, session: SupervisorSession, context: RunContext): Promise<SandboxJobResult> {
  const done = session.done;
  if (done?.error !== undefined) throw new AppError(ErrorCode.INTERNAL, `the sandbox supervisor failed: ${done.error}`);
  const commandResults: CommandResult[] = [];
  const stdoutParts: Buffer[] = [];
  const rawStdout = session.stdout.toBuffer();
  let exitCode = -1;
  let stdoutAt = 0;
  for (const [index, command] of job.commands.entries()) {
    if (!session.started.has(index)) break;
    const ended = session.ended.get(index);
    exitCode = ended?.exitCode ?? -1;
    // Each command's output is cleaned on its own, so where one ends stays known (a caller reads a gate's report from it).
    const end = session.stdoutEnds.get(index) ?? rawStdout.length;
    const part = stripControlSequences(rawStdout.subarray(stdoutAt, end));
    stdoutParts.push(part);
    stdoutAt = end;
    commandResults.push({
      name: command.name,
      exitCode,
      duration: durationFromMs((ended?.durationNs ?? 0) / 1e6),
      timedOut: ended?.timedOut ?? context.killedAtDeadline,
      stdoutBytes: part.length,
    });
  }
  if (stdoutAt < rawStdout.length) stdoutParts.push(stripControlSequences(rawStdout.subarray(stdoutAt)));
  const timedOut = done?.timedOut === true || context.killedAtDeadline;
  // Without a cgroup counter to read, a SIGKILL nobody sent is the sign of an OOM kill.
  const oomKilled = done?.oomKilled === true || context.hostOomKilled === true || (done?.oomCounter === false && done.sigkilled === true && !timedOut);
  const stderr = session.stderr.toBuffer();
  const notes: string[] = [...(done?.notes ?? [])];
  if (done === undefined && !context.killedAtDeadline) {
    notes.push('the sandbox supervisor ended before the job finished (killed or stopped by the code under test); nothing the run wrote is trusted');
    const diagnostics = session.diagnosticText;
    if (diagnostics !== '') notes.push(`supervisor: ${diagnostics}`);
  }
  const archive = session.outputArchive;
  const outputs = done === undefined ? { files: new Map<string, Buffer>(), rejected: [] } : await readOutputs(archive.data);
  const rejected = [...outputs.rejected, ...(archive.truncated ? ['the output archive was over its cap and was cut'] : [])];
  const tampered = done === undefined ? [] : tamperedPaths(job, outputs.files, outputs.rejected);
  const framework = job.language === Language.LANGUAGE_PYTHON ? 'pytest' : 'node:test';
  let report = parseJUnit(job.testReportPath === '' ? undefined : outputs.files.get(reportEntryName)?.toString('utf8'), framework);
  const reportRefused = rejected.find((entry) => entry.startsWith(`${reportEntryName}:`));
  if (done === undefined && !timedOut) report = { ...emptyReport(framework), parseError: 'the sandbox supervisor ended before the job finished; no report is trusted' };
  else if (tampered.length > 0) report = { ...emptyReport(framework), parseError: `the code under test changed its tests or their configuration (${tampered.join(', ')}); the report is not trusted` };
  else if (reportRefused !== undefined) report = { ...emptyReport(framework), parseError: `the report was refused: ${reportRefused.slice(reportEntryName.length + 2)}` };
  else if (timedOut && !report.parsed) report = { ...report, parseError: `the run timed out after ${limits.timeoutMs} ms, before a report was written` };
  const firstStart = session.started.get(0);
  const startupNs = firstStart === undefined ? undefined : Number(firstStart - context.takenAtNs);
  return {
    jobId: job.jobId,
    taskId: job.taskId,
    exitCode: done === undefined ? -1 : exitCode,
    stdout: Buffer.concat(stdoutParts),
    stderr: stripControlSequences(notes.length === 0 ? stderr : Buffer.concat([stderr, Buffer.from(notes.map((note) => `\nratchet: ${note}`).join('') + '\n')])),
    stdoutTruncated: session.stdout.truncated || done?.stdoutTruncated === true,
    stderrTruncated: session.stderr.truncated || done?.stderrTruncated === true,
    timedOut,
    oomKilled,
    resourceUsage: {
      wallTime: durationFromMs(context.wallMs),
      cpuTime: done?.cpuNs === undefined ? undefined : durationFromMs(done.cpuNs / 1e6),
      peakMemoryBytes: done?.peakMemoryBytes ?? 0,
      peakPids: 0,
    },
    testReport: report,
    commandResults,
    driver: context.driver,
    runnerId: context.runnerId,
    startedAt: context.startedAt,
    completedAt: new Date(),
    error: undefined,
    tamperedPaths: tampered,
    rejectedOutputs: rejected,
    // A clock the sandbox does not share (gVisor) gives nonsense; leave it unset then.
    startup: startupNs !== undefined && startupNs >= 0 && startupNs / 1e6 <= context.wallMs ? durationFromMs(startupNs / 1e6) : undefined,
  };
}

/**
 * For a job with protected paths: those that changed or went missing, and
 * test configuration files the run created or changed.
 */
export function tamperedPaths(job: SandboxJob, files: ReadonlyMap<string, Buffer>, rejected: readonly string[] = []): string[] {
  if (job.protectedPaths.length === 0) return [];
  const sent = new Map(job.files.map((file) => [file.path, file.content]));
  const tampered: string[] = [];
  for (const protectedPath of job.protectedPaths) {
    const before = sent.get(protectedPath);
    const after = files.get(protectedPath);
    if (before === undefined) continue;
    if (after === undefined) tampered.push(`${protectedPath} (removed or replaced by a non-file)`);
    else if (digest(after) !== digest(Buffer.from(before, 'utf8'))) tampered.push(`${protectedPath} (changed)`);
  }
  const configNames = new Set(testConfigNames);
  for (const [name, content] of files) {
    if (name === reportEntryName || !configNames.has(name.split('/').at(-1) ?? '')) continue;
    const before = sent.get(name);
    if (before === undefined) tampered.push(`${name} (created by the run)`);
    else if (!job.protectedPaths.includes(name) && digest(content) !== digest(Buffer.from(before, 'utf8'))) tampered.push(`${name} (changed)`);
  }
  // A test configuration file planted as a link or other non-file is refused, and still an attempt.
  for (const entry of rejected) {
    const name = entry.slice(0, entry.indexOf(': '));
    if (configNames.has(name.split('/').at(-1) ?? '') && !job.protectedPaths.includes(name)) tampered.push(`${name} (${entry.slice(name.length + 2)})`);
  }
  return tampered;
}

function digest(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

function emptyReport(framework: string) {
  return { framework, total: 0, passed: 0, failed: 0, errored: 0, skipped: 0, duration: undefined, cases: [], parsed: false, parseError: '' };
}

