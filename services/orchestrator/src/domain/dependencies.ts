import { ApprovalKind, DependencyVerdict, type ApprovalGate, type Dependency, type DependencyDecision } from '@ratchet/contracts';
import { pendingGate, type TaskRecord } from './records';
import { dependencyGateText, importedPackagesGateText } from './summaries';

/**
 * A package name as the policy compares it: lower case, and runs of `-`,
 * `_` and `.` as one `-` (PEP 503; npm names never differ only in those).
 */
export function packageKey(name: string): string {
  return name.trim().toLowerCase().replace(/[-_.]+/g, '-');
}

/** Names a person approved for this task: the safety check counts them as allowed. */
export function approvedPackages(task: Pick<TaskRecord, 'dependencyDecisions'>): string[] {
  return task.dependencyDecisions.filter((decision) => decision.approvedBy !== '').map((decision) => decision.dependency?.name ?? '');
}

/** What the tests get installed: every package the policy or a person allowed, with its install spec. */
export function installList(task: Pick<TaskRecord, 'dependencyDecisions'>): Dependency[] {
  return task.dependencyDecisions
    .filter((decision) => decision.verdict === DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED && !decision.provided && decision.dependency !== undefined)
    .map((decision) => ({ name: decision.dependency?.name ?? '', versionSpec: decision.installSpec }));
}

/** The packages of `decisions` with this verdict. */
export function withVerdict(decisions: readonly DependencyDecision[], verdict: DependencyVerdict): DependencyDecision[] {
  return decisions.filter((decision) => decision.verdict === verdict);
}

/**
 * The task's decisions after a new plan's check: the check's answers, with
 * an earlier approval's approver carried over, and every earlier refusal
 * kept (as DENIED), so a refused package stays refused for the task and
 * stays on the record.
 */
export function planDecisions(earlier: readonly DependencyDecision[], checked: readonly DependencyDecision[]): DependencyDecision[] {
  const before = new Map(earlier.map((decision) => [packageKey(decision.dependency?.name ?? ''), decision]));
  const answers = checked.map((decision) => {
    const previous = before.get(packageKey(decision.dependency?.name ?? ''));
    if (previous === undefined) return decision;
    if (refused(previous)) return previous;
    return previous.approvedBy !== '' && decision.verdict === DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED ? { ...decision, approvedBy: previous.approvedBy } : decision;
  });
  const named = new Set(answers.map((decision) => packageKey(decision.dependency?.name ?? '')));
  return [...answers, ...earlier.filter((decision) => refused(decision) && !named.has(packageKey(decision.dependency?.name ?? '')))];
}

/** Undeclared imports the safety check allowed, added to the task's list (once per package). */
export function withUndeclared(task: Pick<TaskRecord, 'dependencyDecisions'>, allowed: readonly DependencyDecision[]): readonly DependencyDecision[] {
  const known = new Set(task.dependencyDecisions.map((decision) => packageKey(decision.dependency?.name ?? '')));
  const added = allowed.filter((decision) => !known.has(packageKey(decision.dependency?.name ?? '')) && known.add(packageKey(decision.dependency?.name ?? '')));
  return added.length === 0 ? task.dependencyDecisions : [...task.dependencyDecisions, ...added];
}

/** A refusal a person made on a DEPENDENCY_INSTALL gate (the policy's denials have no approver). */
function refused(decision: DependencyDecision): boolean {
  return decision.verdict === DependencyVerdict.DEPENDENCY_VERDICT_DENIED && decision.reason.startsWith(refusedPrefix);
}

const refusedPrefix = 'refused by ';

/** The decisions after a person decided the gate: what waited for approval is now allowed (by them) or refused (by them). */
export function gateDecided(decisions: readonly DependencyDecision[], gate: ApprovalGate, approved: boolean): DependencyDecision[] {
  const comment = gate.comment === '' ? '' : `: ${gate.comment}`;
  return decisions.map((decision) => {
    if (decision.verdict !== DependencyVerdict.DEPENDENCY_VERDICT_NEEDS_APPROVAL) return decision;
    return approved
      ? { ...decision, verdict: DependencyVerdict.DEPENDENCY_VERDICT_ALLOWED, approvedBy: gate.approver, reason: `approved by ${gate.approver}${comment}` }
      : { ...decision, verdict: DependencyVerdict.DEPENDENCY_VERDICT_DENIED, approvedBy: '', reason: `${refusedPrefix}${gate.approver || 'nobody in time'}${comment}` };
  });
}

/** The DEPENDENCY_INSTALL gate for `waiting` (its wording is `dependencyGateText`'s). */
export function dependencyGate(task: Pick<TaskRecord, 'id' | 'goal'>, iteration: number, waiting: readonly DependencyDecision[], gateId: string, at: Date): ApprovalGate {
  return pendingGate(task, iteration, ApprovalKind.APPROVAL_KIND_DEPENDENCY_INSTALL, dependencyGateText(task, waiting), gateId, at);
}

/**
 * The SAFETY_OVERRIDE gate for packages the change imports that wait for a
 * person (the safety check's REQUIRE_APPROVAL); its wording is
 * `importedPackagesGateText`'s.
 */
export function importedPackagesGate(task: Pick<TaskRecord, 'id' | 'goal'>, iteration: number, waiting: readonly DependencyDecision[], gateId: string, at: Date): ApprovalGate {
  return pendingGate(task, iteration, ApprovalKind.APPROVAL_KIND_SAFETY_OVERRIDE, importedPackagesGateText(task, waiting), gateId, at);
}
/** The refusals a person made earlier in the task of any of `asked`: such a package is not asked about again. */
export function refusedEarlier(decisions: readonly DependencyDecision[], asked: readonly DependencyDecision[]): DependencyDecision[] {
  const keys = new Set(asked.map((decision) => packageKey(decision.dependency?.name ?? '')));
  return decisions.filter((decision) => refused(decision) && keys.has(packageKey(decision.dependency?.name ?? '')));
}
