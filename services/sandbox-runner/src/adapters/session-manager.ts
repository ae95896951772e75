import { isUtf8 } from 'node:buffer';
import { isSubjectToken } from '@ratchet/bus';
import { createHash } from 'node:crypto';
import { checkWorkspacePath, durationFromMs, msOf, workspaceFileProblem, workspacePathProblem } from '@ratchet/agent';
import type {
  CloseSessionRequest,
  CloseSessionResponse,
  DataFile,
  DependencyInstall,
  OpenSessionRequest,
  OpenSessionResponse,
  SessionDiffRequest,
  SessionDiffResponse,
  SessionExecRequest,
  SessionExecResponse,
  SessionFileProblem,
  SessionListFilesRequest,
  SessionListFilesResponse,
  SessionReadFilesRequest,
  SessionReadFilesResponse,
  SessionWriteFilesRequest,
  SessionWriteFilesResponse,
  SourceFile,
} from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { effectiveLimits, maximumLimits, maxSandboxFiles, validateSandboxInput, type EffectiveLimits } from '../domain/job-limits';
import type { SessionAnswer } from '../domain/session-channel';
import { packFiles, readOutputs } from '../domain/supervisor-protocol';
import { outputsBeside, setupDirectory, setupEnvironment } from '../domain/setup';
import { bytesOf } from '../domain/work-files';
import { stripControlSequences } from '../domain/terminal-text';
import type { SandboxLogger } from './bubblewrap-driver';
import type { SessionLaunch, SessionSandbox } from './session-sandbox';

/** A driver that can start session sandboxes: DockerDriver and BubblewrapDriver both can. */
export interface SessionDriver {
  openSession(launch: SessionLaunch): Promise<SessionSandbox>;
  /** The files a workspace's setup made (see DependencySandbox.setup); a driver without it refuses sessions with a setup. */
  setup?(request: Pick<OpenSessionRequest, 'taskId' | 'iteration' | 'language' | 'files' | 'dataFiles' | 'image' | 'setupCommand'> & { jobId: string }, signal?: AbortSignal): Promise<{ setup: DependencyInstall; outputs?: DataFile[] }>;
}

export interface SessionManagerOptions {
  /** The runner's limits for values a request leaves at 0. */
  readonly defaults: EffectiveLimits;
  /** Sessions nobody called for this long are closed, ms. Default 600000. */
  readonly idleMs?: number;
  /** Sessions this runner holds at once; one more is refused (retryable). Default 16. */
  readonly maxSessions?: number;
  /** Most files a session opens with. Default `maxSandboxFiles` (20000). */
  readonly maxFiles?: number;
  /** Told when a session's work directory could not be made a git repository. */
  readonly logger?: SandboxLogger;
}

/** One read request's cap on what comes back, bytes; a diff reads in rounds of this. */
const readBatchBytes = 8 * 1024 * 1024;
/** Largest file read or carried in a diff, bytes. */
const maxFileBytes = 1024 * 1024;
/** Files a listing returns at most. */
const maxListed = 20_000;
/** After a request's own time (a command's timeout), how long the supervisor has to answer before the session is ended, ms. */
const answerGraceMs = 5_000;
/** How long committing a new session's start may take, ms (a large workspace takes a few seconds). */
const gitCommitMs = 120_000;
/**
 * What running tests and tools leaves behind and a diff does not carry:
 * caches and build output, never the user's change.
 */
const generatedPrefixes = ['.pytest_cache/', '__pycache__/', 'node_modules/', '.ratchet-report/', '.mypy_cache/', '.ruff_cache/', `${setupDirectory}/`];

interface LiveSession {
  readonly id: string;
  readonly taskId: string;
  readonly sandbox: SessionSandbox;
  readonly limits: EffectiveLimits;
  /** sha256 of every file the session opened with, by path. */
  readonly initial: ReadonlyMap<string, string>;
  readonly response: OpenSessionResponse;
  readonly idleMs: number;
  timer: NodeJS.Timeout | undefined;
}

/**
 * The sandbox sessions of one runner: opens them on the driver, serves
 * their calls, closes them when asked, when idle, or when the runner stops.
 * A call for a session this runner does not hold is NOT_FOUND; a call whose
 * sandbox died is UNAVAILABLE (retryable: open a new session).
 */
export class SessionManager {
  private readonly sessions = new Map<string, Promise<LiveSession>>();
  private readonly idleMs: number;
  private readonly maxSessions: number;
  private readonly maxFiles: number;
  private closing = false;

  constructor(
    private readonly driver: SessionDriver,
    private readonly runnerId: string,
    private readonly options: SessionManagerOptions,
  ) {
    this.idleMs = options.idleMs ?? 600_000;
    this.maxSessions = options.maxSessions ?? 16;
    this.maxFiles = options.maxFiles ?? maxSandboxFiles;
  }

  /** Sessions open (or opening) now. */
  get size(): number {
    return this.sessions.size;
  }

  /**
   * Opens a session, or returns the live one with the same id.
   *
   * @throws AppError INVALID_ARGUMENT for a bad id, path or limit;
   *   RESOURCE_EXHAUSTED (retryable) when this runner holds its maximum;
   *   what the driver throws when the sandbox cannot start.
   */
  async open(request: OpenSessionRequest): Promise<OpenSessionResponse> {
    // The id names the session in logs and containers: a subject token's characters.
    if (!isSubjectToken(request.sessionId)) {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, `session_id ${JSON.stringify(request.sessionId.slice(0, 200))} must be 1-128 letters, digits, '_' or '-'`);
    }
    const existing = this.sessions.get(request.sessionId);
    if (existing !== undefined) return (await existing).response;
    if (this.closing) throw new AppError(ErrorCode.UNAVAILABLE, `runner ${this.runnerId} is shutting down; open the session on another runner`, { retryable: true });
    if (this.sessions.size >= this.maxSessions) {
      throw new AppError(ErrorCode.RESOURCE_EXHAUSTED, `runner ${this.runnerId} holds ${this.sessions.size} sessions, its maximum (sandbox.maxSessions); retry later or start another runner`, { retryable: true });
    }
    const limits = effectiveLimits(request.limits, this.options.defaults);
    validateSandboxInput([...request.files, ...request.dataFiles], request.env, limits, { maxFiles: this.maxFiles, what: 'session' });
    const opening = this.start(request, limits);
    this.sessions.set(request.sessionId, opening);
    try {
      return (await opening).response;
    } catch (error) {
      this.sessions.delete(request.sessionId);
      throw error;
    }
  }

  /**
   * Runs one command in the session's work directory.
   *
   * @throws AppError NOT_FOUND for an unknown session; INVALID_ARGUMENT for
   *   an empty argv or a working directory outside the work directory;
   *   UNAVAILABLE (retryable) when the sandbox is gone.
   */
  async exec(request: SessionExecRequest): Promise<SessionExecResponse> {
    const session = await this.session(request.sessionId);
    if (request.argv.length === 0 || request.argv[0] === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'argv is empty; give a program and its arguments');
    if (request.workingDirectory !== '' && workspacePathProblem(request.workingDirectory) !== undefined) {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, `working_directory ${JSON.stringify(request.workingDirectory)} must be a relative path inside the work directory`);
    }
    const timeoutMs = Math.min(msOf(request.timeout) || session.limits.timeoutMs, maximumLimits.timeoutMs);
    const outputLimit = Math.min(request.outputLimitBytes > 0 ? Number(request.outputLimitBytes) : session.limits.outputLimitBytes, maximumLimits.outputLimitBytes);
    const answer = await this.ask(session, { op: 'exec', argv: request.argv, cwd: request.workingDirectory, timeoutMs, outputLimit }, undefined, timeoutMs, outputLimit);
    const done = answer.done;
    return {
      exitCode: typeof done['exitCode'] === 'number' ? done['exitCode'] : -1,
      stdout: stripControlSequences(answer.stdout),
      stderr: stripControlSequences(answer.stderr),
      stdoutTruncated: done['stdoutTruncated'] === true || answer.stdout.length >= outputLimit,
      stderrTruncated: done['stderrTruncated'] === true || answer.stderr.length >= outputLimit,
      timedOut: done['timedOut'] === true,
      duration: durationFromMs(typeof done['durationNs'] === 'number' ? done['durationNs'] / 1e6 : 0),
      oomKilled: done['oomKilled'] === true,
    };
  }

  /**
   * Reads text files. A path that is missing, a directory, a link, binary
   * or over 1 MiB is listed in `problems` with why, not thrown. The
   * session's own git repository (`.git/HEAD`) can be read; only writes,
   * deletions and commands are kept out of repository metadata.
   *
   * @throws AppError NOT_FOUND for an unknown session; INVALID_ARGUMENT for a path outside the work directory.
   */
  async readFiles(request: SessionReadFilesRequest): Promise<SessionReadFilesResponse> {
    const session = await this.session(request.sessionId);
    for (const path of request.paths) checkWorkspacePath(path, 'read', { allowRepositoryMetadata: true });
    const { files, problems } = await this.read(session, [...new Set(request.paths)]);
    return { files, problems };
  }

  /**
   * Writes and deletes files.
   *
   * @throws AppError NOT_FOUND for an unknown session; INVALID_ARGUMENT for
   *   a path outside the work directory or inside version-control metadata
   *   (a `.git/config` with core.fsmonitor would run a command on the next
   *   `git status`, bypassing the command policy), or one the sandbox could
   *   not write (a directory in the way, the work directory full).
   */
  async writeFiles(request: SessionWriteFilesRequest): Promise<SessionWriteFilesResponse> {
    const session = await this.session(request.sessionId);
    for (const file of request.files) checkWorkspacePath(file.path, 'write');
    for (const path of request.deletedPaths) checkWorkspacePath(path, 'delete');
    const answer = await this.ask(session, { op: 'write', delete: request.deletedPaths }, packFiles(request.files), session.limits.timeoutMs);
    return { written: request.files.length, deleted: typeof answer.done['deleted'] === 'number' ? answer.done['deleted'] : 0 };
  }

  /**
   * Lists regular files under a directory, sorted: links are not followed,
   * and `.git` and caches (as in `diff`) are left out unless `directory`
   * is inside them (the session's own repository can be looked at).
   *
   * @throws AppError NOT_FOUND for an unknown session; INVALID_ARGUMENT for a directory outside the work directory.
   */
  async listFiles(request: SessionListFilesRequest): Promise<SessionListFilesResponse> {
    const session = await this.session(request.sessionId);
    if (request.directory !== '') checkWorkspacePath(request.directory.replace(/\/+$/, ''), 'list', { allowRepositoryMetadata: true });
    const limit = request.limit > 0 ? Math.min(request.limit, maxListed) : maxListed;
    const answer = await this.ask(session, { op: 'list', directory: request.directory.replace(/\/+$/, ''), limit }, undefined, session.limits.timeoutMs);
    const rows = (answer.done['files'] as [string, number][] | undefined) ?? [];
    const files = rows
      .filter(([path]) => !generated(path))
      .map(([path, size]) => ({ path, sizeBytes: size }))
      .sort((left, right) => (left.path < right.path ? -1 : left.path > right.path ? 1 : 0));
    return { files, truncated: answer.done['truncated'] === true };
  }

  /**
   * What changed since the session opened: files created or changed (text,
   * up to 1 MiB each), files deleted, and changes that cannot be carried as
   * text. Caches and build output (`.pytest_cache/`, `__pycache__/`,
   * `node_modules/`, ...) are left out. Version-control metadata a command
   * made (`.GIT/config`, `sub/.hg/hgrc`) and a file git would take for a
   * repository's HEAD are never carried: they are listed in `skipped`, since
   * written to the user's disk they could run commands there.
   *
   * @throws AppError NOT_FOUND for an unknown session; UNAVAILABLE (retryable) when the sandbox is gone.
   */
  async diff(request: SessionDiffRequest): Promise<SessionDiffResponse> {
    const session = await this.session(request.sessionId);
    const answer = await this.ask(session, { op: 'hashes', limit: this.maxFiles * 5 }, undefined, session.limits.timeoutMs);
    const rows = (answer.done['files'] as [string, number, string][] | undefined) ?? [];
    const others = (answer.done['others'] as string[] | undefined) ?? [];
    const skipped: SessionFileProblem[] = [];
    if (answer.done['truncated'] === true) skipped.push({ path: '.', reason: `the work directory holds more than ${this.maxFiles * 5} entries; files past them were not compared` });
    const present = new Set<string>();
    const changed: { path: string; size: number }[] = [];
    for (const [path, size, hash] of rows) {
      if (generated(path)) continue;
      present.add(path);
      if (session.initial.get(path) === hash) continue;
      const problem = workspacePathProblem(path);
      if (problem !== undefined) skipped.push({ path, reason: `path ${problem}; not carried out of the sandbox` });
      else changed.push({ path, size });
    }
    for (const path of others) {
      if (generated(path)) continue;
      present.add(path);
      skipped.push({ path, reason: 'not a regular file (a link, device or socket); only regular files are carried' });
    }
    const deletedPaths = [...session.initial.keys()].filter((path) => !present.has(path)).sort();
    const changedFiles: SourceFile[] = [];
    // Read in rounds that each fit one answer.
    let batch: string[] = [];
    let batchBytes = 0;
    const flush = async () => {
      if (batch.length === 0) return;
      const { files, problems } = await this.read(session, batch);
      for (const file of files) {
        const problem = workspaceFileProblem(file.path, file.content);
        if (problem !== undefined) skipped.push({ path: file.path, reason: `${problem}; not carried out of the sandbox` });
        else changedFiles.push(file);
      }
      skipped.push(...problems);
      batch = [];
      batchBytes = 0;
    };
    for (const { path, size } of changed) {
      if (size > maxFileBytes) {
        skipped.push({ path, reason: `${size} bytes, over the ${maxFileBytes}-byte cap on a changed file` });
        continue;
      }
      if (batchBytes + size > readBatchBytes) await flush();
      batch.push(path);
      batchBytes += size;
    }
    await flush();
    changedFiles.sort((left, right) => (left.path < right.path ? -1 : 1));
    return { changedFiles, deletedPaths, skipped };
  }

  /** Ends a session and removes its sandbox; false when there was none. */
  async close(request: CloseSessionRequest): Promise<CloseSessionResponse> {
    const opening = this.sessions.get(request.sessionId);
    if (opening === undefined) return { closed: false };
    this.sessions.delete(request.sessionId);
    const session = await opening.catch(() => undefined);
    if (session === undefined) return { closed: false };
    clearTimeout(session.timer);
    await session.sandbox.end();
    return { closed: true };
  }

  /** Closes every session and, unless `reopen`, refuses new ones: the runner's shutdown. */
  async closeAll(options: { reopen?: boolean } = {}): Promise<void> {
    this.closing = options.reopen !== true;
    await Promise.all([...this.sessions.keys()].map((sessionId) => this.close({ sessionId })));
  }

  private async start(request: OpenSessionRequest, limits: EffectiveLimits): Promise<LiveSession> {
    const started = performance.now();
    const idleMs = msOf(request.idleTimeout) || this.idleMs;
    const setupFiles = await this.setupFiles(request);
    const sandbox = await this.driver.openSession({
      sessionId: request.sessionId,
      files: [...request.files, ...request.dataFiles, ...setupFiles],
      env: request.setupCommand === '' ? request.env : setupEnvironment(request.env),
      limits,
      image: request.image,
      // The sandbox's own bound, should this runner die: a minute past the idle close.
      idleSeconds: Math.ceil(idleMs / 1000) + 60,
    });
    const gitRepository = await this.commitStart(sandbox, request.sessionId);
    const session: LiveSession = {
      id: request.sessionId,
      taskId: request.taskId,
      sandbox,
      limits,
      // Data files and what the setup made are part of the start: the diff reports them only when the session changed them.
      // (The setup's installs are build output, which the diff never looks at.)
      initial: new Map([...request.files, ...request.dataFiles, ...setupFiles].filter((file) => !generated(file.path)).map((file) => [file.path, sha256(bytesOf(file))])),
      response: { sessionId: request.sessionId, runnerId: this.runnerId, driver: sandbox.driver, startup: durationFromMs(performance.now() - started), gitRepository },
      idleMs,
      timer: undefined,
    };
    // A sandbox that died on its own takes its session with it.
    void sandbox.closed.then(() => {
      if (this.sessions.get(session.id) !== undefined) void this.forget(session);
    });
    this.touch(session);
    return session;
  }

  /**
   * Makes the new session's work directory a git repository with one commit
   * of how it starts, so the model can `git diff` its change and `git stash`
   * it to re-run the original; build output and caches are ignored. Returns
   * whether it is one: an image without git, or a commit that fails, leaves
   * a plain directory (the session works the same, only without history).
   */
  private async commitStart(sandbox: SessionSandbox, sessionId: string): Promise<boolean> {
    // As the diff leaves them out: at any depth.
    const ignored = generatedPrefixes.join('\\n');
    const script = [
      'command -v git >/dev/null 2>&1 || exit 3',
      'git init -q',
      `printf '${ignored}\\n' >> .git/info/exclude`,
      'git add -A',
      'git -c user.name=Ratchet -c user.email=ratchet@localhost -c commit.gpgsign=false commit -q --no-verify --allow-empty -m "The workspace as the task started"',
    ].join(' && ');
    try {
      const answer = await sandbox.channel.request({ op: 'exec', argv: ['sh', '-c', script], cwd: '', timeoutMs: gitCommitMs, outputLimit: 16_384 }, undefined, 16_384);
      const exitCode = answer.done['exitCode'];
      if (exitCode === 0) return true;
      if (exitCode !== 3) this.options.logger?.warn({ sessionId, exitCode }, `the work directory of session ${sessionId} is not a git repository: ${stripControlSequences(answer.stderr).toString('utf8').trim().slice(0, 300)}`);
      return false;
    } catch (error) {
      this.options.logger?.warn({ sessionId }, `the work directory of session ${sessionId} is not a git repository: ${AppError.from(error).message}`);
      return false;
    }
  }

  /** The files the request's setup made, beside its own; none without a setup. @throws AppError FAILED_PRECONDITION when the setup failed. */
  private async setupFiles(request: OpenSessionRequest): Promise<DataFile[]> {
    if (request.setupCommand === '') return [];
    if (this.driver.setup === undefined) throw new AppError(ErrorCode.FAILED_PRECONDITION, `runner ${this.runnerId} cannot run a workspace's setup command; open the session without one`);
    const prepared = await this.driver.setup({ ...request, jobId: `session-${request.sessionId}` });
    if (prepared.outputs === undefined) throw new AppError(ErrorCode.FAILED_PRECONDITION, `the session's workspace could not be set up: ${prepared.setup.error}`);
    return outputsBeside(prepared.outputs, [...request.files, ...request.dataFiles]);
  }

  private async forget(session: LiveSession): Promise<void> {
    clearTimeout(session.timer);
    // Calls keep getting UNAVAILABLE from the failed channel until the caller closes; the sandbox's resources go now.
    await session.sandbox.end();
  }

  private async session(sessionId: string): Promise<LiveSession> {
    const opening = this.sessions.get(sessionId);
    if (opening === undefined) throw new AppError(ErrorCode.NOT_FOUND, `runner ${this.runnerId} holds no session ${JSON.stringify(sessionId.slice(0, 200))} (closed, idle for too long, or opened elsewhere); open a new session`);
    const session = await opening;
    this.touch(session);
    return session;
  }

  private touch(session: LiveSession): void {
    clearTimeout(session.timer);
    session.timer = setTimeout(() => void this.close({ sessionId: session.id }), session.idleMs);
    session.timer.unref();
  }

  /** One request to the session's supervisor, ended with the session when no answer comes in `answerMs`. */
  private async ask(session: LiveSession, body: Record<string, unknown>, block: Buffer | undefined, answerMs: number, outputLimit?: number): Promise<SessionAnswer> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new AppError(ErrorCode.UNAVAILABLE, `the sandbox of session ${session.id} stopped answering (its supervisor was stopped or killed); the session is closed, open a new one`, { retryable: true }));
        void this.close({ sessionId: session.id });
      }, answerMs + answerGraceMs);
    });
    try {
      const answer = await Promise.race([session.sandbox.channel.request(body, block, outputLimit), late]);
      if (typeof answer.done['error'] === 'string') throw new AppError(ErrorCode.INVALID_ARGUMENT, `the sandbox refused the ${String(body['op'])} request: ${answer.done['error']}`);
      return answer;
    } finally {
      clearTimeout(timer);
      this.touch(session);
    }
  }

  private async read(session: LiveSession, paths: readonly string[]): Promise<{ files: SourceFile[]; problems: SessionFileProblem[] }> {
    const answer = await this.ask(session, { op: 'read', paths, maxBytes: readBatchBytes }, undefined, session.limits.timeoutMs);
    const outputs = await readOutputs(answer.archive, { maxBytes: readBatchBytes, maxFiles: paths.length + 1 });
    const refused = new Map(outputs.rejected.map((entry) => [entry.slice(0, entry.indexOf(': ')), entry.slice(entry.indexOf(': ') + 2)]));
    const notes = ((answer.done['notes'] as string[] | undefined) ?? []).join('; ');
    const files: SourceFile[] = [];
    const problems: SessionFileProblem[] = [];
    for (const path of paths) {
      const content = outputs.files.get(path);
      if (content === undefined) {
        problems.push({ path, reason: refused.get(path) ?? (notes.includes(path) ? notes : 'no such file') });
      } else if (content.length > maxFileBytes) {
        problems.push({ path, reason: `${content.length} bytes, over the ${maxFileBytes}-byte cap on a file read` });
      } else if (content.subarray(0, 8192).includes(0) || !isUtf8(content)) {
        problems.push({ path, reason: 'binary (not UTF-8 text)' });
      } else {
        files.push({ path, content: content.toString('utf8') });
      }
    }
    return { files, problems };
  }
}

function generated(path: string): boolean {
  return generatedPrefixes.some((prefix) => path.startsWith(prefix) || path.includes(`/${prefix}`));
}

function sha256(data: Buffer): string {
  return createHash('sha256').update(data).digest('hex');
}

