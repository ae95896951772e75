import { capText, numberLines } from '@ratchet/agent';
import type { CallOptions, ServiceClient } from '@ratchet/bus';
import { SafetyVerdict, type CommandDecision, type Language, type SafetyServiceDefinition, type SandboxRunnerServiceDefinition } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { applyEdit, ToolName, type ValidCall } from '../domain/agent-tools';
import type { ToolOutcome } from '../domain/agent-loop';

export interface SessionToolsOptions {
  /** A client pinned to the runner holding the session. */
  readonly sandbox: ServiceClient<typeof SandboxRunnerServiceDefinition>;
  readonly safety: ServiceClient<typeof SafetyServiceDefinition>;
  readonly sessionId: string;
  readonly taskId: string;
  readonly language: Language;
  /** Paths the model must not change (acceptance tests). */
  readonly protectedPaths: ReadonlySet<string>;
  /** Run commands the policy asks a person about (the user approved them for the task). */
  readonly approveAsked: boolean;
  /** Stop at a command the policy asks about, for a person to decide (server mode); otherwise refuse it. */
  readonly commandGates: boolean;
  /** What people decided about commands of this task. */
  readonly decisions: readonly CommandDecision[];
  /** Default timeout of a run command, ms. */
  readonly commandTimeoutMs: number;
  /** Deadline and cancellation of every call (the phase's). */
  readonly call: () => CallOptions;
}

/** Time a session call other than a command may take, ms: a runner that died mid-call is noticed this soon. */
const sessionCallMs = 30_000;
/** Past a command's own timeout, how long its answer may take, ms. */
const commandGraceMs = 15_000;

/** Characters of one tool result sent back to the model. */
const maxResultChars = 12_000;
/** Files a listing shows. */
const maxListed = 400;
/** Search hits shown. */
const maxHits = 100;

/**
 * Runs the agentic coder's tools against a sandbox session: files are read
 * and written in the session, searches and commands run in it, and every
 * command line first goes through safety's command policy. What goes wrong
 * with the model's request (no such file, no match, a denied command) is a
 * failed outcome the model reads; a lost session throws (UNAVAILABLE).
 */
export class SessionTools {
  constructor(private readonly options: SessionToolsOptions) {}

  /** @throws AppError UNAVAILABLE (retryable) when the session's runner or sandbox is gone; what the calls throw otherwise. */
  async execute(call: ValidCall): Promise<ToolOutcome> {
    try {
      return await this.dispatch(call);
    } catch (error) {
      const appError = AppError.from(error);
      // The model's own mistakes come back as outcomes; the session's loss ends the phase.
      if (appError.code === ErrorCode.INVALID_ARGUMENT) return { result: appError.message, failed: true };
      const phaseOver = (this.options.call().deadline ?? Infinity) <= Date.now();
      // A runner that died mid-call never answers: its call runs out of time, which is the session's loss, not the phase's.
      if (appError.code === ErrorCode.NOT_FOUND || appError.code === ErrorCode.UNAVAILABLE || (appError.code === ErrorCode.DEADLINE_EXCEEDED && !phaseOver)) {
        throw new AppError(ErrorCode.UNAVAILABLE, `the coder's sandbox session was lost (${appError.message}); the coding phase runs again with a fresh session`, { retryable: true, cause: error });
      }
      throw appError;
    }
  }

  private async dispatch(call: ValidCall): Promise<ToolOutcome> {
    const { sandbox, sessionId } = this.options;
    switch (call.tool) {
      case ToolName.LIST_FILES: {
        const directory = (call.args.directory ?? '').replace(/^\.\/?/, '').replace(/\/+$/, '');
        const listed = await sandbox.sessionListFiles({ sessionId, directory, limit: maxListed + 1 }, this.bounded(sessionCallMs));
        if (listed.files.length === 0) return { result: directory === '' ? '(the workspace is empty)' : `no files under ${directory}`, failed: directory !== '' };
        const shown = listed.files.slice(0, maxListed).map((file) => `${file.path} (${file.sizeBytes} bytes)`);
        const more = listed.files.length > maxListed || listed.truncated ? `\n... more files; list a subdirectory or search` : '';
        return { result: shown.join('\n') + more, failed: false };
      }
      case ToolName.READ_FILE: {
        const content = await this.readText(call.args.path);
        if (typeof content !== 'string') return content;
        const { text, shown, total } = numberLines(content, call.args.start_line ?? 1, call.args.end_line);
        if (total === 0) return { result: `${call.args.path} is empty`, failed: false };
        const header = shown[0] === 1 && shown[1] === total ? `${call.args.path} (${total} lines)` : `${call.args.path} lines ${shown[0]}-${shown[1]} of ${total}`;
        return { result: capText(`${header}\n${text}`, maxResultChars), failed: false };
      }
      case ToolName.SEARCH: {
        const target = (call.args.path ?? '').replace(/^\.\/?/, '') || '.';
        const result = await sandbox.sessionExec(
          {
            sessionId,
            argv: ['grep', '-rnIE', '--exclude-dir=.git', '--exclude-dir=node_modules', '--exclude-dir=.pytest_cache', '--exclude-dir=__pycache__', '-m', '20', '--', call.args.pattern, target],
            workingDirectory: '',
            timeout: { seconds: 30, nanos: 0 },
            outputLimitBytes: 256 * 1024,
          },
          this.bounded(30_000 + commandGraceMs),
        );
        if (result.exitCode === 1) return { result: `no match for ${JSON.stringify(call.args.pattern)} in ${target}`, failed: false };
        if (result.exitCode !== 0) return { result: `search failed: ${result.stderr.toString('utf8').trim() || `grep exited ${result.exitCode}`}`, failed: true };
        const hits = result.stdout.toString('utf8').split('\n').filter((line) => line !== '');
        const lines = hits.slice(0, maxHits).map((line) => capText(line.replace(/^\.\//, ''), 300));
        return { result: capText(lines.join('\n') + (hits.length > maxHits ? `\n... ${hits.length - maxHits} more hits; narrow the pattern or the path` : ''), maxResultChars), failed: false };
      }
      case ToolName.EDIT_FILE: {
        const refused = this.refuseProtected(call.args.path);
        if (refused !== undefined) return refused;
        const content = await this.readText(call.args.path);
        if (typeof content !== 'string') return content;
        const edited = applyEdit(call.args.path, content, call.args.search, call.args.replace);
        if (!edited.ok) return { result: edited.error, failed: true };
        await sandbox.sessionWriteFiles({ sessionId, files: [{ path: call.args.path, content: edited.content }], deletedPaths: [] }, this.bounded(sessionCallMs));
        return { result: `edited ${call.args.path}`, failed: false };
      }
      case ToolName.WRITE_FILE: {
        const refused = this.refuseProtected(call.args.path);
        if (refused !== undefined) return refused;
        await sandbox.sessionWriteFiles({ sessionId, files: [{ path: call.args.path, content: call.args.content }], deletedPaths: [] }, this.bounded(sessionCallMs));
        return { result: `wrote ${call.args.path} (${call.args.content.split('\n').length} lines)`, failed: false };
      }
      case ToolName.RUN:
        return this.run(call.args.command, call.args.timeout_seconds);
      case ToolName.FINISH:
        return { result: 'finished', failed: false };
    }
  }

  private async run(command: string, timeoutSeconds: number | undefined): Promise<ToolOutcome> {
    const check = await this.options.safety.checkCommand({ taskId: this.options.taskId, argv: [], workingDirectory: '', language: this.options.language, commandLine: command }, this.bounded(sessionCallMs));
    if (check.verdict === SafetyVerdict.SAFETY_VERDICT_BLOCK) return { result: `command refused by the command policy: ${check.reason}`, failed: true, decision: 'deny' };
    if (check.verdict === SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL && !this.options.approveAsked) {
      const decided = this.options.decisions.findLast((decision) => decision.commandLine === command);
      if (decided !== undefined && !decided.approved) {
        return { result: `command not run: a person refused it${decided.comment === '' ? '' : ` (${decided.comment})`}; do without it`, failed: true, decision: 'ask' };
      }
      if (decided === undefined && this.options.commandGates) {
        return { result: `waiting for a person to decide whether it may run (${check.reason})`, failed: false, decision: 'ask', pause: { commandLine: command, reason: check.reason } };
      }
      if (decided === undefined) {
        return { result: `command not run: the command policy asks a person first (${check.reason}), and nobody approved it for this task; do without it`, failed: true, decision: 'ask' };
      }
    }
    const decision = check.verdict === SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL ? 'ask' : 'allow';
    const timeoutMs = timeoutSeconds === undefined ? this.options.commandTimeoutMs : timeoutSeconds * 1000;
    const result = await this.options.sandbox.sessionExec(
      { sessionId: this.options.sessionId, argv: ['sh', '-c', command], workingDirectory: '', timeout: { seconds: Math.ceil(timeoutMs / 1000), nanos: 0 }, outputLimitBytes: 0 },
      this.bounded(timeoutMs + commandGraceMs),
    );
    const parts = [result.timedOut ? `timed out after ${Math.ceil(timeoutMs / 1000)} s (killed)` : `exit code ${result.exitCode}`];
    if (result.oomKilled) parts.push('a process ran out of memory and was killed');
    const stdout = result.stdout.toString('utf8');
    const stderr = result.stderr.toString('utf8');
    if (stdout !== '') parts.push(`stdout:\n${stdout}${result.stdoutTruncated ? '\n[output cut at the cap]' : ''}`);
    if (stderr !== '') parts.push(`stderr:\n${stderr}${result.stderrTruncated ? '\n[output cut at the cap]' : ''}`);
    return { result: capText(parts.join('\n'), maxResultChars), failed: false, decision };
  }

  /** The file's text, or the failed outcome saying why it cannot be read. */
  private async readText(path: string): Promise<string | ToolOutcome> {
    const read = await this.options.sandbox.sessionReadFiles({ sessionId: this.options.sessionId, paths: [path] }, this.bounded(sessionCallMs));
    const file = read.files[0];
    if (file !== undefined) return file.content;
    const reason = read.problems[0]?.reason ?? 'no such file';
    return { result: `cannot read ${path}: ${reason}${reason === 'no such file' ? '; list_files shows what exists' : ''}`, failed: true };
  }

  /** The phase's call options, with a deadline no later than `ms` from now. */
  private bounded(ms: number): CallOptions {
    const phase = this.options.call();
    return { ...phase, deadline: Math.min(phase.deadline ?? Infinity, Date.now() + ms) };
  }

  private refuseProtected(path: string): ToolOutcome | undefined {
    if (!this.options.protectedPaths.has(path)) return undefined;
    return { result: `${path} is an acceptance test and cannot be changed; change the code so that it passes`, failed: true };
  }
}
