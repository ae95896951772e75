import { setImmediate as yieldToEventLoop } from 'node:timers/promises';
import type { CallContext } from '@ratchet/bus';
import { Confidence, SafetyVerdict, type CheckCodeRequest, type CheckCodeResponse, type SafetyFinding } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { analyzeFile, checkLimits, summarize, type AnalysisLimits } from '../domain/analyze';
import { Verdict, verdictOf, type Finding } from '../domain/findings';
import type { Parsers } from '../domain/syntax';
import { severityToProto } from './proto-severity';

const verdictToProto: Readonly<Record<Verdict, SafetyVerdict>> = {
  [Verdict.ALLOW]: SafetyVerdict.SAFETY_VERDICT_ALLOW,
  [Verdict.WARN]: SafetyVerdict.SAFETY_VERDICT_WARN,
  [Verdict.BLOCK]: SafetyVerdict.SAFETY_VERDICT_BLOCK,
};

function findingToProto(finding: Finding): SafetyFinding {
  const severity = severityToProto[finding.severity];
  return { ...finding, severity, cwe: '', confidence: Confidence.CONFIDENCE_HIGH, tool: 'ratchet', action: verdictToProto[verdictOf([finding])] };
}

/**
 * CheckCode: the verdict and findings for the request's files. The grammar of
 * each file comes from its extension, so `request.language` is not needed.
 * Files are analysed one at a time with a turn of the event loop between
 * them, so Health and other calls are answered during a large check and an
 * expired deadline stops the work.
 *
 * @throws AppError INVALID_ARGUMENT when the files are over the limits;
 *   DEADLINE_EXCEEDED or CANCELLED when the call is given up on mid-check.
 */
export function checkCodeHandler(parsers: Parsers, limits: AnalysisLimits) {
  return async (request: CheckCodeRequest, context: CallContext): Promise<CheckCodeResponse> => {
    checkLimits(request.files, limits);
    const findings: Finding[] = [];
    for (const file of request.files) {
      if (context.signal.aborted) throw abortReason(context.signal);
      findings.push(...analyzeFile(parsers, file));
      await yieldToEventLoop();
    }
    const analysis = summarize(findings, limits);
    return { verdict: verdictToProto[analysis.verdict], findings: analysis.findings.map(findingToProto) };
  };
}

function abortReason(signal: AbortSignal): AppError {
  return AppError.is(signal.reason) ? signal.reason : new AppError(ErrorCode.CANCELLED, 'the safety check was cancelled');
}
