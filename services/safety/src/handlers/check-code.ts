import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import { workspacePathProblem } from '@ratchet/agent';
import type { CallContext } from '@ratchet/bus';
import { BanditRun, type CheckCodeRequest, type CheckCodeResponse, type SafetyFinding, type SandboxCommand } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { runBandit, type BanditOutcome, type SandboxJobs } from '../adapters/bandit-scanner';
import type { EslintScanner } from '../adapters/eslint-scanner';
import { analyzeFile, checkLimits, summarize, type AnalysisLimits, type SourceText } from '../domain/analyze';
import { BanditCache } from '../domain/bandit-cache';
import type { BanditReport } from '../domain/bandit-findings';
import { banditGateCommand, readGateOutput } from '../domain/bandit-gate';
import { markPreExisting } from '../domain/change-baseline';
import { applyPolicy, BanditMode, type CodeCheckSettings } from '../domain/code-policy';
import { detectionOf, RuleId, Tool, type Detection, type Finding } from '../domain/findings';
import { Grammar, grammarOf, type Parsers } from '../domain/syntax';
import { confidenceToProto, severityToProto, verdictToProto } from './proto-enums';

/** What CheckCode works with. */
export interface CheckCodeDependencies {
  readonly parsers: Parsers;
  readonly limits: AnalysisLimits;
  readonly settings: CodeCheckSettings;
  /** Runs eslint-plugin-security; unset or `settings.eslint` off: not run. */
  readonly eslint?: EslintScanner;
  /** Where the Bandit job goes; unset: Bandit does not run (and `required` was refused at start). */
  readonly sandbox?: SandboxJobs;
  /** Bandit's reports of files seen before (default: one for this handler). */
  readonly banditCache?: BanditCache;
}

/** Time left to answer after a Bandit job gives up, ms. */
const answerReserveMs = 1_000;

/** The longest argument the gate command may have: below Linux's MAX_ARG_STRLEN (128 KiB), with room to spare. */
const maxGateArgumentBytes = 96 * 1024;

/** Where the originals of the files sit in the one Bandit job that scans both versions. */
const baselineDirectory = '.ratchet-baseline/';

function findingToProto(finding: Finding): SafetyFinding {
  return {
    ...finding,
    preExisting: finding.preExisting === true,
    severity: severityToProto[finding.severity],
    confidence: confidenceToProto[finding.confidence],
    action: verdictToProto[finding.action],
  };
}

/**
 * CheckCode: every file through the built-in tree-sitter rules (the
 * blocking pre-check), JavaScript/TypeScript also through
 * eslint-plugin-security, and the Python files through Bandit in one
 * sandbox job that runs while the rest is checked; then the policy gives
 * each finding its action and the verdict is the most severe one. The
 * grammar of each file comes from its extension, so `request.language` is
 * not needed. Files are checked one at a time with a turn of the event loop
 * between them, so Health and other calls are answered during a large check
 * and an expired deadline stops the work. With `base_files` (the files as
 * they were before the change) the originals are scanned the same way, in
 * the same Bandit job, and the findings they already had are marked
 * pre-existing: only what the change introduced decides the verdict.
 * Bandit's report of a file is kept by path and content (`BanditCache`):
 * the next iteration sends only what changed to the sandbox.
 *
 * @throws AppError INVALID_ARGUMENT when the files are over the limits;
 *   UNAVAILABLE (retryable) when Bandit is required and could not run;
 *   DEADLINE_EXCEEDED or CANCELLED when the call is given up on mid-check.
 */
export function checkCodeHandler(dependencies: CheckCodeDependencies) {
  const { parsers, limits, settings, sandbox } = dependencies;
  const eslint = settings.eslint ? dependencies.eslint : undefined;
  const cache = dependencies.banditCache ?? new BanditCache();
  return async (request: CheckCodeRequest, context: CallContext): Promise<CheckCodeResponse> => {
    checkLimits(request.files, limits);
    // Only the originals of files in the request matter: a finding is judged against its own file's past.
    const checked = new Set(request.files.map((file) => file.path));
    const baseFiles = request.baseFiles.filter((file) => checked.has(file.path));
    checkLimits(baseFiles, limits);
    const scanned = [...request.files, ...baseFiles.map((file) => ({ path: `${baselineDirectory}${file.path}`, content: file.content }))];
    const python = settings.bandit === BanditMode.OFF || sandbox === undefined ? [] : scanned.filter(isPythonToScan);
    // Files Bandit already scanned with this content are not sent again; with none left, no job runs.
    const { known, unknown } = cache.split(python);
    const { gated, gate, toJob } = planBandit(request, unknown, baseFiles, settings);
    const bandit = toJob.length === 0 || sandbox === undefined ? undefined : startBandit(sandbox, toJob, request, context, settings.banditTimeoutMs);
    // Settled before anything can throw below, so a failed check leaves no unhandled rejection behind.
    const banditOutcome = bandit?.catch((error: unknown) => error as AppError);
    const byFile = new Map<string, Detection[]>();
    const add = (path: string, detections: readonly Detection[]) => {
      const list = byFile.get(path) ?? [];
      list.push(...detections);
      byFile.set(path, list);
    };
    for (const file of scanned) {
      if (context.signal.aborted) throw abortReason(context.signal);
      const builtIn = analyzeFile(parsers, file);
      add(file.path, builtIn);
      // A path that leaves the workspace is all there is to say about the file.
      if (eslint !== undefined && builtIn[0]?.ruleId !== RuleId.PATH_OUTSIDE_WORKSPACE) add(file.path, eslint.scan(file));
      await yieldToEventLoop();
    }
    const extra: Detection[] = [];
    const addReport = (report: BanditReport) => {
      for (const detection of report.detections) add(detection.path, [detection]);
      for (const error of report.errors) add(error.path, [banditSkipped(error.path, `Bandit could not scan this file (${error.reason})`)]);
    };
    addReport(known);
    if (gated !== undefined) {
      addReport(gated.report);
      cache.remember(gated.files, gated.report);
    }
    if (banditOutcome !== undefined) {
      const outcome = await banditOutcome;
      if (outcome instanceof Error) throw outcome;
      if (outcome.ran) {
        addReport(outcome.report);
        cache.remember(toJob, outcome.report);
      } else if (settings.bandit === BanditMode.REQUIRED) {
        throw new AppError(
          ErrorCode.UNAVAILABLE,
          `Bandit did not run: ${outcome.reason}. code.bandit is "required" in config/safety.yaml, so CheckCode does not answer without it; fix the sandbox, or set code.bandit (RATCHET_CODE_BANDIT) to auto to go on with the other scanners`,
        );
      } else {
        const count = toJob.filter((file) => !file.path.startsWith(baselineDirectory)).length;
        extra.push(banditSkipped('', `Bandit did not scan the ${count} Python file${count === 1 ? '' : 's'}: ${outcome.reason}. The built-in rules${eslint === undefined ? '' : ' and ESLint'} still checked them`));
      }
    }
    const inOrder = (files: readonly SourceText[], prefix = '') =>
      files.flatMap((file) => {
        const detections = byFile.get(`${prefix}${file.path}`) ?? [];
        byFile.delete(`${prefix}${file.path}`);
        // Stable, by line only: at one line, the built-in rules first (in column order), then ESLint, then Bandit.
        return detections.sort((left, right) => left.line - right.line).map((detection) => (prefix === '' ? detection : { ...detection, path: file.path }));
      });
    const ordered = inOrder(request.files);
    const before = applyPolicy(settings.policy, inOrder(baseFiles, baselineDirectory));
    const after = applyPolicy(settings.policy, [...ordered, ...extra]);
    const analysis = summarize(baseFiles.length === 0 ? after : markPreExisting(after, before, request.files, baseFiles), limits);
    return { verdict: verdictToProto[analysis.verdict], findings: analysis.findings.map(findingToProto), ...(gate === undefined ? {} : { banditGate: gate }) };
  };
}

/**
 * Where the Python files Bandit has no report of get scanned, by the
 * request's `bandit_run`: all in a job of CheckCode's own (UNSPECIFIED);
 * the changed files by a gate in the test job, the originals (which are not
 * in that sandbox) in a job (DEFERRED); from the gate's output, what it did
 * not scan in a job (REPORTED).
 */
function planBandit(
  request: CheckCodeRequest,
  unknown: readonly SourceText[],
  baseFiles: readonly SourceText[],
  settings: CodeCheckSettings,
): { gated?: { files: SourceText[]; report: BanditReport }; gate?: SandboxCommand; toJob: readonly SourceText[] } {
  const changed = unknown.filter((file) => !file.path.startsWith(baselineDirectory));
  const originals = unknown.filter((file) => file.path.startsWith(baselineDirectory));
  if (request.banditRun === BanditRun.BANDIT_RUN_DEFERRED) {
    if (changed.length === 0) return { toJob: originals };
    const bases = new Map(baseFiles.map((file) => [file.path, file.content]));
    const gate = banditGateCommand(changed, bases, settings.policy, settings.banditTimeoutMs);
    // A change too large to describe in one argument (Linux takes 128 KiB) is scanned the old way.
    if (gate.argv.some((arg) => Buffer.byteLength(arg) > maxGateArgumentBytes)) return { toJob: unknown };
    return { gate, toJob: originals };
  }
  if (request.banditRun === BanditRun.BANDIT_RUN_REPORTED && changed.length > 0) {
    const read = readGateOutput(request.banditGateOutput, new Map(changed.map((file) => [file.path, file.content])));
    // A gate that did not run, or was given other files (another replica's cache), leaves the rest to a job.
    if (!read.ran) return { toJob: unknown };
    const files = changed.filter((file) => read.scanned.has(file.path));
    return { gated: { files, report: read.report }, toJob: [...changed.filter((file) => !read.scanned.has(file.path)), ...originals] };
  }
  return { toJob: unknown };
}

/** Python files Bandit can scan: a clean workspace path and some content. */
function isPythonToScan(file: SourceText): boolean {
  return file.content.trim() !== '' && workspacePathProblem(file.path) === undefined && grammarOf(file.path, file.content) === Grammar.PYTHON;
}

function startBandit(sandbox: SandboxJobs, files: readonly SourceText[], request: CheckCodeRequest, context: CallContext, timeoutMs: number): Promise<BanditOutcome> {
  const deadline = Math.min(Date.now() + timeoutMs, context.deadline - answerReserveMs);
  if (deadline - Date.now() < answerReserveMs) return Promise.resolve({ ran: false, reason: 'the call left less than 2 s for it; give CheckCode a longer deadline' });
  return runBandit(sandbox, files, { taskId: request.taskId, iteration: request.iteration, deadline, signal: context.signal });
}

function banditSkipped(path: string, message: string): Detection {
  return { ...detectionOf(RuleId.SCANNER_SKIPPED, path, message), tool: Tool.BANDIT };
}

function abortReason(signal: AbortSignal): AppError {
  return AppError.is(signal.reason) ? signal.reason : new AppError(ErrorCode.CANCELLED, 'the safety check was cancelled');
}
