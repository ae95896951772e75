import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { CallContext } from '@ratchet/bus';
import {
  DependencyVerdict as ProtoDependencyVerdict,
  Language,
  SafetyVerdict,
  type CheckDependenciesRequest,
  type CheckDependenciesResponse,
  type DependencyDecision as ProtoDependencyDecision,
  type SafetyFinding,
} from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { importsOfFile, packagesOfImports, type FileImports } from '../domain/dependency-imports';
import { Ecosystem, normalizePackageName } from '../domain/dependency-names';
import {
  checkDependencies,
  checkDependencyLimits,
  DependencyAction,
  DependencyVerdict,
  type DependencyDecision,
  type DependencyFinding,
  type DependencyPolicy,
} from '../domain/dependency-policy';
import type { Parsers } from '../domain/syntax';
import { confidenceToProto, severityToProto } from './proto-enums';

/** The limits on the files of one call: how many, bytes per file, bytes in all. */
export interface DependencyFileLimits {
  readonly maxFiles: number;
  readonly maxFileBytes: number;
  readonly maxTotalBytes: number;
}

const ecosystemOf: Readonly<Partial<Record<Language, Ecosystem>>> = {
  [Language.LANGUAGE_PYTHON]: Ecosystem.PYTHON,
  [Language.LANGUAGE_JAVASCRIPT]: Ecosystem.NPM,
  [Language.LANGUAGE_TYPESCRIPT]: Ecosystem.NPM,
};

const actionToProto: Readonly<Record<DependencyAction, SafetyVerdict>> = {
  [DependencyAction.ALLOW]: SafetyVerdict.SAFETY_VERDICT_ALLOW,
  [DependencyAction.WARN]: SafetyVerdict.SAFETY_VERDICT_WARN,
  [DependencyAction.ASK]: SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL,
  [DependencyAction.BLOCK]: SafetyVerdict.SAFETY_VERDICT_BLOCK,
};

const verdictToProto: Readonly<Record<DependencyVerdict, ProtoDependencyVerdict>> = {
  [DependencyVerdict.ALLOWED]: ProtoDependencyVerdict.DEPENDENCY_VERDICT_ALLOWED,
  [DependencyVerdict.NEEDS_APPROVAL]: ProtoDependencyVerdict.DEPENDENCY_VERDICT_NEEDS_APPROVAL,
  [DependencyVerdict.DENIED]: ProtoDependencyVerdict.DEPENDENCY_VERDICT_DENIED,
};

function findingToProto(finding: DependencyFinding): SafetyFinding {
  return {
    ruleId: finding.ruleId,
    severity: severityToProto[finding.severity],
    path: finding.path,
    line: finding.line,
    column: finding.column,
    message: finding.message,
    snippet: finding.snippet,
    remediation: finding.remediation,
    cwe: '',
    confidence: confidenceToProto[finding.confidence],
    tool: 'dependency-policy',
    action: actionToProto[finding.action],
    preExisting: false,
  };
}

function decisionToProto(decision: DependencyDecision): ProtoDependencyDecision {
  return {
    dependency: { name: decision.name, versionSpec: decision.versionSpec },
    verdict: verdictToProto[decision.verdict],
    reason: decision.reason,
    installSpec: decision.installSpec,
    declared: decision.declared,
    importedAt: [...decision.importedAt],
    // Who approved is the orchestrator's record; the request only names what was.
    approvedBy: '',
    provided: decision.provided,
  };
}

/**
 * CheckDependencies: the policy's decision on every package the plan
 * declares and every third-party package the request's files import without
 * declaring it, with findings and the overall verdict (BLOCK, REQUIRE_APPROVAL,
 * WARN or ALLOW; see `checkDependencies`). Packages the `base_files` (the
 * code before the change) already import are left out, and so are optional
 * imports (see `packagesOfImports`). The language selects the
 * ecosystem: PyPI for Python, npm for JavaScript and TypeScript. Files are
 * parsed one at a time with a turn of the event loop between them, so an
 * expired deadline stops the work.
 *
 * @throws AppError INVALID_ARGUMENT for an unspecified language, too many
 *   or too large files, more than 200 dependencies, an empty name or one over
 *   214 characters; DEADLINE_EXCEEDED or CANCELLED when the call is given up on.
 */
export function checkDependenciesHandler(parsers: Parsers, policy: DependencyPolicy, limits: DependencyFileLimits) {
  return async (request: CheckDependenciesRequest, context: CallContext): Promise<CheckDependenciesResponse> => {
    const ecosystem = ecosystemOf[request.language];
    if (ecosystem === undefined) {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, 'language is not set: send LANGUAGE_PYTHON (PyPI packages) or LANGUAGE_JAVASCRIPT / LANGUAGE_TYPESCRIPT (npm packages)');
    }
    checkDependencyLimits(request);
    checkFileLimits(request.files, limits);
    checkFileLimits(request.baseFiles, limits);
    const importsOf = async (files: readonly { path: string; content: string }[]) => {
      const fileImports: FileImports[] = [];
      for (const file of files) {
        if (context.signal.aborted) throw abortReason(context.signal);
        fileImports.push({ path: file.path, imports: importsOfFile(parsers, ecosystem, file) });
        await yieldToEventLoop();
      }
      if (context.signal.aborted) throw abortReason(context.signal);
      return packagesOfImports(ecosystem, files, fileImports);
    };
    // What the code imported before the change is the project's own business: only new imports are judged.
    const existing = new Set((await importsOf(request.baseFiles)).map((found) => normalizePackageName(ecosystem, found.name)));
    const imports = (await importsOf(request.files)).filter((found) => !existing.has(normalizePackageName(ecosystem, found.name)));
    const check = checkDependencies(policy, { ecosystem, dependencies: request.dependencies, imports, approved: request.approved });
    return { verdict: actionToProto[check.verdict], findings: check.findings.map(findingToProto), decisions: check.decisions.map(decisionToProto) };
  };
}

function checkFileLimits(files: readonly { path: string; content: string }[], limits: DependencyFileLimits): void {
  if (files.length > limits.maxFiles) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `${files.length} files sent; CheckDependencies takes at most ${limits.maxFiles} files per call: send the files that import packages`);
  }
  let total = 0;
  for (const file of files) {
    const bytes = Buffer.byteLength(file.content, 'utf8');
    if (bytes > limits.maxFileBytes) {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, `${file.path} is ${bytes} bytes; CheckDependencies takes files of at most ${limits.maxFileBytes} bytes: leave generated or data files out`);
    }
    total += bytes;
  }
  if (total > limits.maxTotalBytes) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `the files total ${total} bytes; CheckDependencies takes at most ${limits.maxTotalBytes} bytes per call: send the files that import packages`);
  }
}

function abortReason(signal: AbortSignal): AppError {
  return AppError.is(signal.reason) ? signal.reason : new AppError(ErrorCode.CANCELLED, 'the dependency check was cancelled');
}
