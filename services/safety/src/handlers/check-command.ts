import type { CallContext } from '@ratchet/bus';
import { Confidence, SafetyVerdict, type CheckCommandRequest, type CheckCommandResponse, type SafetyFinding } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { checkCommand } from '../domain/command-check';
import { CommandDecision, decisionOf, type CommandFinding, type CommandPolicy } from '../domain/command-policy';
import type { Parsers } from '../domain/syntax';
import { severityToProto } from './proto-enums';

const decisionToProto: Readonly<Record<CommandDecision, SafetyVerdict>> = {
  [CommandDecision.ALLOW]: SafetyVerdict.SAFETY_VERDICT_ALLOW,
  [CommandDecision.ASK]: SafetyVerdict.SAFETY_VERDICT_REQUIRE_APPROVAL,
  [CommandDecision.DENY]: SafetyVerdict.SAFETY_VERDICT_BLOCK,
};

function findingToProto(finding: CommandFinding): SafetyFinding {
  // Commands have no file: path stays empty, as the contract says.
  return { ...finding, path: '', severity: severityToProto[finding.severity], cwe: '', confidence: Confidence.CONFIDENCE_HIGH, tool: 'ratchet', action: decisionToProto[decisionOf(finding.severity)], preExisting: false };
}

/**
 * CheckCommand: the policy's verdict on a command line (or an argv) the
 * coder wants to run in the sandbox: ALLOW, BLOCK (denied) or
 * REQUIRE_APPROVAL (ask), with a finding per denied or asked-about command
 * and a one-line reason. `request.language` is not needed: the policy
 * covers every toolchain.
 *
 * @throws AppError INVALID_ARGUMENT for an empty or oversized command or a
 *   working directory outside the work directory; CANCELLED when the call
 *   was given up on before it started.
 */
export function checkCommandHandler(parsers: Parsers, policy: CommandPolicy) {
  return async (request: CheckCommandRequest, context: CallContext): Promise<CheckCommandResponse> => {
    // Parsing a capped command line takes milliseconds: checked once, up front.
    if (context.signal.aborted) throw AppError.is(context.signal.reason) ? context.signal.reason : new AppError(ErrorCode.CANCELLED, 'the command check was cancelled');
    const check = checkCommand(parsers, policy, { commandLine: request.commandLine, argv: request.argv, workingDirectory: request.workingDirectory });
    return { verdict: decisionToProto[check.decision], findings: check.findings.map(findingToProto), reason: check.reason };
  };
}
