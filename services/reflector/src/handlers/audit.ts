import { countTokens, languageFromProto, type RoleBudgetSettings } from '@ratchet/agent';
import { assertPlaceholders, callRole, fitPrompt, goalSection, replySchemaTokens, type RolePrompt } from '@ratchet/prompting';
import type { CallContext } from '@ratchet/bus';
import type { AuditRequest, AuditResponse, SafetyFinding } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { ChatRole, type RoleModel } from '@ratchet/llm';
import { describeChange } from '../domain/change';
import { fromAudit, fromScanner, orderFindings, type ScannerFinding, type ScannerVerdict } from '../domain/findings';
import { auditReplySchema } from '../domain/review-reply';
import { findingToProto, severityFromProto } from './proto-enums';
import { changeSection, noUsage } from './review';

const placeholders = ['goal', 'language', 'change', 'scannerFindings'];

/** Scanner findings the auditor judges one by one; more are recorded unjudged (counted as real). */
export const maxJudgedScannerFindings = 40;

/** Characters of a scanner finding's snippet shown to the auditor. */
const maxSnippetChars = 300;

/** Scanner findings numbered for the auditor's verdicts, with rule, tool, severity, CWE, place, snippet and remedy; `(none)` when empty. */
export function formatScannerFindings(findings: readonly SafetyFinding[]): string {
  if (findings.length === 0) return '(none)';
  return findings
    .map((finding, index) => {
      const labels = [finding.ruleId, finding.tool === '' ? '' : `from ${finding.tool}`, severityFromProto(finding.severity), finding.cwe].filter((label) => label !== '').join(', ');
      const place = finding.path === '' ? '(no file)' : finding.line > 0 ? `${finding.path}:${finding.line}` : finding.path;
      const snippet = finding.snippet.trim() === '' ? '' : `\n   code: ${finding.snippet.trim().slice(0, maxSnippetChars)}`;
      const remedy = finding.remediation.trim() === '' ? '' : `\n   fix: ${finding.remediation.trim()}`;
      return `${index + 1}. [${labels}] ${place}: ${finding.message}${snippet}${remedy}`;
    })
    .join('\n');
}

/** The scanner findings judged: the first ones (at most `maxJudgedScannerFindings`) whose list takes at most `maxTokens`. */
function judgedFindings(findings: readonly SafetyFinding[], maxTokens: number): SafetyFinding[] {
  let count = Math.min(findings.length, maxJudgedScannerFindings);
  while (count > 0 && countTokens(formatScannerFindings(findings.slice(0, count))) > maxTokens) count -= 1;
  return findings.slice(0, count);
}

function scannerFinding(finding: SafetyFinding): ScannerFinding {
  return { ruleId: finding.ruleId, tool: finding.tool, severity: severityFromProto(finding.severity), path: finding.path, line: finding.line, cwe: finding.cwe, message: finding.message, remediation: finding.remediation };
}

/**
 * Audit: the change (as the reviewer sees it) and the static scanners'
 * findings on it -> security findings against the OWASP Top 10 and the CWE
 * weaknesses the prompt names. The response combines both: every scanner
 * finding (`source` its rule id, the auditor's verdict in its message) and
 * the auditor's own, most severe first; an own finding repeating a scanner
 * finding (same place and CWE) is dropped. Places are checked as in Review.
 * Blocking rule (`auditFindingBlocks`): high and critical findings about
 * the change block, except scanner findings the auditor judged false
 * positives. Without a change and scanner findings the model is not called.
 *
 * The prompt is fitted to `settings.promptBudgetTokens`: the scanner
 * findings the auditor judges are kept whole (as many as fit a third of the
 * budget, at most `maxJudgedScannerFindings`; the rest are recorded
 * unjudged), and the diff gets the largest share of the rest. A reply that
 * stays invalid after its repair round comes back as `replyFailure` (no
 * findings), with the tokens every call used.
 *
 * @throws AppError INVALID_ARGUMENT for an empty goal or unspecified
 *   language; RESOURCE_EXHAUSTED when the template alone is over the budget.
 */
export function auditHandler(roleModel: RoleModel, prompt: RolePrompt, settings: RoleBudgetSettings) {
  assertPlaceholders('auditor', prompt, placeholders);
  return async (request: AuditRequest, context: CallContext): Promise<AuditResponse> => {
    if (request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; the auditor reads a change against the goal it is for');
    const language = languageFromProto(request.language);
    const change = describeChange(request.baseFiles, request.files);
    if (change.files.length === 0 && request.scannerFindings.length === 0) {
      return { findings: [], summary: 'Nothing changed and the scanners found nothing, so there is nothing to audit.', usage: noUsage, replyFailure: undefined };
    }
    const judged = judgedFindings(request.scannerFindings, Math.floor(settings.promptBudgetTokens / 3));
    const schema = auditReplySchema(judged.length);
    const reply = await callRole({
      role: ChatRole.AUDITOR,
      roleModel,
      prompt,
      values: fitPrompt(
        prompt,
        [
          goalSection(request.goal, settings.promptBudgetTokens),
          { name: 'language', text: language, fixed: true },
          changeSection(change),
          // Numbered for the verdicts: each one shown must be judged, so none is cut.
          { name: 'scannerFindings', text: formatScannerFindings(judged), fixed: true },
        ],
        settings.promptBudgetTokens,
        { budgetKey: 'auditor.promptBudgetTokens', reservedTokens: replySchemaTokens(schema) },
      ).values,
      schema,
      ...(request.maxTokens > 0 ? { maxTokens: request.maxTokens } : {}),
      signal: context.signal,
    });
    if (!reply.ok) return { findings: [], summary: '', usage: reply.usage, replyFailure: reply.failure };
    const verdicts = new Map<number, ScannerVerdict>(reply.value.scannerVerdicts.map((verdict) => [verdict.number, { real: verdict.real, reason: verdict.reason }]));
    const scanner = request.scannerFindings.map((finding, index) => fromScanner(scannerFinding(finding), verdicts.get(index + 1), change));
    const own = reply.value.findings
      .map((finding) => fromAudit(finding, change))
      .filter((finding) => finding.cwe === '' || !scanner.some((found) => found.path === finding.path && found.line === finding.line && found.cwe === finding.cwe));
    const findings = orderFindings([...scanner, ...own]);
    return { findings: findings.map(findingToProto), summary: reply.value.summary, usage: reply.usage, replyFailure: undefined };
  };
}
