import { AppError, ErrorCode } from '@ratchet/errors';
import { isNodeBuiltin, pythonStdlibModules, wellKnownPackages } from './dependency-known';
import { Ecosystem, isNameProblem, maxPackageNameLength, normalizePackageName, parsePackageName, typosquatTarget } from './dependency-names';
import { combineVersionSpecs, maxVersionSpecLength, normalizeVersionSpec, versionSatisfies, versionSpecProblem } from './dependency-versions';
import { Confidence, Severity } from './findings';

/** What happens to a package the allowlist does not name: `default` in config/dependencies.yaml. */
export const DefaultDecision = { ASK: 'ask', ALLOW: 'allow', DENY: 'deny' } as const;
export type DefaultDecision = (typeof DefaultDecision)[keyof typeof DefaultDecision];

/** The policy's answer for one package; the domain's twin of the proto `DependencyVerdict`. */
export const DependencyVerdict = { ALLOWED: 'allowed', NEEDS_APPROVAL: 'needs-approval', DENIED: 'denied' } as const;
export type DependencyVerdict = (typeof DependencyVerdict)[keyof typeof DependencyVerdict];

/**
 * What a finding asks for, and the verdict of a whole check (the most severe
 * of its findings' actions): the domain's twin of the proto `SafetyVerdict`,
 * `ask` being REQUIRE_APPROVAL.
 */
export const DependencyAction = { ALLOW: 'allow', WARN: 'warn', ASK: 'ask', BLOCK: 'block' } as const;
export type DependencyAction = (typeof DependencyAction)[keyof typeof DependencyAction];

/** Stable ids of the dependency rules, carried by findings; an id never changes meaning. */
export const DependencyRuleId = {
  /** The denylist names the package, `default: deny` applies, or it is part of the language's standard library. */
  DENIED: 'dep.denied',
  /** The name is a near miss of an allowed or well-known package ("flaks" for flask). */
  TYPOSQUAT: 'dep.typosquat',
  /** Neither list names it and `default: ask`: a person must approve the install. */
  NEEDS_APPROVAL: 'dep.needs-approval',
  /** The code imports a package the plan did not declare. */
  UNDECLARED_IMPORT: 'dep.undeclared-import',
  /** The name or the version specifier is not valid, or the version is outside the allowed range. */
  INVALID_SPEC: 'dep.invalid-spec',
} as const;
export type DependencyRuleId = (typeof DependencyRuleId)[keyof typeof DependencyRuleId];


/** An `allow:` entry of config/dependencies.yaml. */
export interface AllowedPackage {
  readonly name: string;
  /** The versions allowed, in the ecosystem's syntax (PEP 440 `>=2,<4`, semver `^4`); absent: any. */
  readonly version?: string | undefined;
  /** Why it is allowed, for readers of the file. */
  readonly note?: string | undefined;
}

/** A `deny:` entry of config/dependencies.yaml. */
export interface DeniedPackage {
  readonly name: string;
  /** One line, shown to the user and the model: why not, and what to use instead. */
  readonly reason: string;
}

/** The rules for one ecosystem. */
export interface EcosystemPolicy {
  /** For packages neither list names (nor `provided`). */
  readonly default: DefaultDecision;
  readonly allow: readonly AllowedPackage[];
  readonly deny: readonly DeniedPackage[];
  /** Packages the sandbox image already has: never installed, always fine. */
  readonly provided: readonly string[];
}

/** A package a sandbox image has installed, at the version it has. */
export interface ImagePackage {
  readonly name: string;
  /** The exact version installed (PEP 440 for Python, semver for npm). */
  readonly version: string;
}

/** An `images:` entry of config/dependencies.yaml: what one sandbox image has beyond `provided`. */
export interface SandboxImagePackages {
  /** The image reference as `sandbox.image` names it ("ratchet-sandbox:3-data"). */
  readonly image: string;
  readonly python: readonly ImagePackage[];
  readonly npm: readonly ImagePackage[];
}

/** The dependency policy: config/dependencies.yaml, as `loadDependencyPolicy` reads it. */
export interface DependencyPolicy {
  /** The file reasons name, relative to the config directory's parent: "config/dependencies.yaml". */
  readonly source: string;
  readonly python: EcosystemPolicy;
  readonly npm: EcosystemPolicy;
  /** What each known sandbox image has installed beyond `provided`. */
  readonly images: readonly SandboxImagePackages[];
  /**
   * The image the sandbox runs the tests in (`sandbox.image`); its entry of
   * `images`, if any, counts as provided. '' when not known: only `provided`.
   */
  readonly sandboxImage: string;
}

/**
 * The `images` entry of the image the sandbox uses, if the policy lists it:
 * the same reference, or one that ends in `/` and the entry's reference
 * (`registry.example.com/ratchet-sandbox:3-data` is `ratchet-sandbox:3-data`).
 * A digest (`@sha256:...`) is not compared.
 */
export function sandboxImagePackages(policy: Pick<DependencyPolicy, 'images' | 'sandboxImage'>): SandboxImagePackages | undefined {
  const reference = policy.sandboxImage.trim().split('@')[0] ?? '';
  if (reference === '') return undefined;
  return policy.images.find((entry) => reference === entry.image || reference.endsWith(`/${entry.image}`));
}

/** A package the plan declares. */
export interface DependencyRequest {
  readonly name: string;
  /** In the ecosystem's syntax; '' for any. */
  readonly versionSpec: string;
}

/** Where the code imports a package: 1-based line and column. */
export interface ImportSite {
  readonly path: string;
  readonly line: number;
  readonly column: number;
}

/** A third-party package the code imports (see `packagesOfImports`). */
export interface ImportedPackage {
  /** The package that provides the import (the distribution, for Python: `PyYAML` for `import yaml`). */
  readonly name: string;
  /** The module as the code names it: `yaml`, `@scope/pkg/sub`. */
  readonly module: string;
  /** Every import of it, in file order then position; never empty. */
  readonly sites: readonly ImportSite[];
}

/** What CheckDependencies is asked about, with the language already turned into an ecosystem. */
export interface DependencyCheckInput {
  readonly ecosystem: Ecosystem;
  /** The plan's declared packages. */
  readonly dependencies: readonly DependencyRequest[];
  /** Packages the code imports; those the plan does not declare are judged too. */
  readonly imports: readonly ImportedPackage[];
  /** Names a person approved for this task. */
  readonly approved: readonly string[];
}

/** The answer for one package. */
export interface DependencyDecision {
  /** As requested; for an undeclared import, the package that provides it. */
  readonly name: string;
  /** As requested; '' for an undeclared import. */
  readonly versionSpec: string;
  readonly verdict: DependencyVerdict;
  /** One line naming the rule that decided. */
  readonly reason: string;
  /** The request's and the allowlist's range together, in the ecosystem's syntax; '' for any. */
  readonly installSpec: string;
  readonly declared: boolean;
  /** "path:line" of every import of it in the code. */
  readonly importedAt: readonly string[];
  /** Allowed because a person approved it for this task. */
  readonly approved: boolean;
  /** Already in the sandbox image (`provided`): nothing to install. */
  readonly provided: boolean;
  /** The rule behind a DENIED or NEEDS_APPROVAL verdict. */
  readonly ruleId?: DependencyRuleId | undefined;
}

/** One rule match; the snippet names the package. */
export interface DependencyFinding {
  readonly ruleId: DependencyRuleId;
  readonly severity: Severity;
  readonly confidence: Confidence;
  readonly action: DependencyAction;
  /** Where an undeclared package is first imported; '' and 0 for a declared one. */
  readonly path: string;
  readonly line: number;
  readonly column: number;
  readonly message: string;
  readonly snippet: string;
  readonly remediation: string;
}

/** The outcome of a dependency check. */
export interface DependencyCheck {
  readonly verdict: DependencyAction;
  /** Declared packages in request order, then undeclared ones by first import. */
  readonly decisions: readonly DependencyDecision[];
  readonly findings: readonly DependencyFinding[];
}

/** Most packages one check takes; a plan needing more is split or trimmed. */
export const maxDependencies = 200;
/** Most approved names one check takes. */
export const maxApprovedNames = 1_000;

/** The policy's answer for one package, before imports and findings are added. */
export interface DependencyJudgement {
  readonly verdict: DependencyVerdict;
  readonly reason: string;
  readonly installSpec: string;
  readonly ruleId?: DependencyRuleId;
  readonly approved?: boolean;
  readonly provided?: boolean;
  /** What to do about a DENIED or NEEDS_APPROVAL verdict. */
  readonly remediation?: string;
}

/**
 * Checks the plan's dependencies and the packages its code imports against
 * the policy. Each package gets a decision: DENIED (denylist; a likely
 * typosquat of an allowed or well-known package; an invalid name or version
 * specifier; an npm range outside the allowed one; `default: deny`),
 * ALLOWED (allowlist, `provided` or the sandbox image's packages, approved
 * for this task, `default: allow`)
 * or NEEDS_APPROVAL (`default: ask`). Imports the plan does not declare are
 * judged the same way and marked undeclared: an allowed one gives a warning,
 * one that needs approval asks (as a declared one does), a denied one
 * blocks. The verdict is BLOCK when anything is denied, else ASK when a
 * package (declared or imported) needs approval, else WARN when there are
 * findings, else ALLOW.
 *
 * @throws AppError INVALID_ARGUMENT for more than 200 dependencies or 1,000
 *   approved names, an empty name, a name over 214 characters or a version
 *   specifier over 256.
 */
export function checkDependencies(policy: DependencyPolicy, input: DependencyCheckInput): DependencyCheck {
  checkDependencyLimits(input);
  const { ecosystem } = input;
  const approved = new Set(input.approved.map((name) => name.trim()).filter((name) => name !== '').map((name) => normalizePackageName(ecosystem, parsedName(ecosystem, name))));
  const declared = new Set(input.dependencies.map((dependency) => normalizePackageName(ecosystem, parsedName(ecosystem, dependency.name))));
  // By package, and by the module's top-level name (declared "jose" is what `import jose` means, whatever provides it).
  const sitesByName = new Map<string, ImportSite[]>();
  const sitesByModule = new Map<string, ImportSite[]>();
  const undeclared: ImportedPackage[] = [];
  for (const imported of input.imports) {
    const normalized = normalizePackageName(ecosystem, imported.name);
    const moduleName = normalizePackageName(ecosystem, ecosystem === Ecosystem.PYTHON ? (imported.module.split('.')[0] ?? imported.module) : imported.name);
    sitesByModule.set(moduleName, [...(sitesByModule.get(moduleName) ?? []), ...imported.sites]);
    const sites = sitesByName.get(normalized);
    if (sites !== undefined) {
      sites.push(...imported.sites);
      continue;
    }
    sitesByName.set(normalized, [...imported.sites]);
    if (!declared.has(normalized) && !declared.has(moduleName)) undeclared.push(imported);
  }

  const decisions: DependencyDecision[] = [];
  const findings: DependencyFinding[] = [];
  for (const dependency of input.dependencies) {
    const name = dependency.name.trim();
    const judgement = judgeDependency(policy, ecosystem, { name, versionSpec: dependency.versionSpec }, approved);
    const normalized = normalizePackageName(ecosystem, parsedName(ecosystem, name));
    const sites = sitesByName.get(normalized) ?? sitesByModule.get(normalized) ?? [];
    decisions.push(decisionOf({ name, versionSpec: dependency.versionSpec.trim() }, judgement, true, sites));
    const finding = declaredFinding(ecosystem, name, judgement);
    if (finding !== undefined) findings.push(finding);
  }
  for (const imported of undeclared) {
    const judgement = judgeDependency(policy, ecosystem, { name: imported.name, versionSpec: '' }, approved);
    const sites = sitesByName.get(normalizePackageName(ecosystem, imported.name)) ?? [];
    decisions.push(decisionOf({ name: imported.name, versionSpec: '' }, judgement, false, sites));
    findings.push(...undeclaredFindings(ecosystem, imported, judgement, sites[0] ?? { path: '', line: 0, column: 0 }));
  }
  return { verdict: verdictOf(findings), decisions, findings };
}

/**
 * The policy's answer for one package, before imports are considered, in
 * this order: an invalid name; the denylist; an invalid version specifier;
 * `provided`; the sandbox image's packages (`images` entry of
 * `sandboxImage`: provided when its version satisfies the request's range
 * and the allowlist's, otherwise judged on as if the image lacked it); the
 * allowlist (an npm range that does not overlap the allowed one is denied);
 * the standard library; a typosquat; `approved`; `default`. `approved`
 * holds normalised names.
 */
export function judgeDependency(policy: DependencyPolicy, ecosystem: Ecosystem, request: DependencyRequest, approved: ReadonlySet<string>): DependencyJudgement {
  const rules = policy[ecosystem];
  const parsed = parsePackageName(ecosystem, request.name);
  if (isNameProblem(parsed)) {
    return denied(DependencyRuleId.INVALID_SPEC, `denied: ${parsed.problem}`, 'Use the package name exactly as the registry spells it, and put the version in version_spec.');
  }
  const { normalized } = parsed;
  const denial = rules.deny.find((entry) => normalizePackageName(ecosystem, entry.name) === normalized);
  if (denial !== undefined) {
    return denied(DependencyRuleId.DENIED, `denied by ${policy.source}: ${denial.name}: ${denial.reason}`, `Do not use ${parsed.name}: ${denial.reason}.`);
  }
  const spec = normalizeVersionSpec(ecosystem, request.versionSpec);
  const specProblem = versionSpecProblem(ecosystem, spec);
  if (specProblem !== undefined) {
    return denied(DependencyRuleId.INVALID_SPEC, `denied: the version of ${parsed.name}: ${specProblem}`, 'Fix version_spec, or leave it empty for the newest allowed version.');
  }
  const provided = rules.provided.find((name) => normalizePackageName(ecosystem, name) === normalized);
  if (provided !== undefined) {
    return { verdict: DependencyVerdict.ALLOWED, reason: `allowed: the sandbox image provides it, so it is not installed (${ecosystem}.provided: ${provided})`, installSpec: '', provided: true };
  }
  const allowance = rules.allow.find((entry) => normalizePackageName(ecosystem, entry.name) === normalized);
  const allowedSpec = normalizeVersionSpec(ecosystem, allowance?.version ?? '');
  // The image's copy counts when its version is one the request and the allowlist both take; otherwise
  // the package is judged as if the image lacked it, and an install shadows the image's copy.
  const image = sandboxImagePackages(policy);
  const installed = image?.[ecosystem].find((entry) => normalizePackageName(ecosystem, entry.name) === normalized);
  let imageNote = '';
  if (image !== undefined && installed !== undefined) {
    if (versionSatisfies(ecosystem, installed.version, spec) && versionSatisfies(ecosystem, installed.version, allowedSpec)) {
      return {
        verdict: DependencyVerdict.ALLOWED,
        reason: `allowed: the sandbox image ${image.image} has ${installed.name} ${installed.version}, so it is not installed (images.${image.image}.${ecosystem} in ${policy.source})`,
        installSpec: '',
        provided: true,
      };
    }
    const wanted = [spec, allowedSpec].filter((part) => part !== '').join(ecosystem === Ecosystem.PYTHON ? ',' : ' ');
    imageNote = `; the sandbox image's ${installed.name} ${installed.version} is outside ${wanted}, so it would be installed`;
  }
  const judgement = judgeUnprovided(policy, ecosystem, parsed, spec, allowance, allowedSpec, approved);
  return imageNote === '' || judgement.verdict === DependencyVerdict.DENIED ? judgement : { ...judgement, reason: `${judgement.reason}${imageNote}` };
}

/** The rest of `judgeDependency`, for a package neither `provided` nor the sandbox image provides. */
function judgeUnprovided(
  policy: DependencyPolicy,
  ecosystem: Ecosystem,
  parsed: { readonly name: string; readonly normalized: string },
  spec: string,
  allowance: AllowedPackage | undefined,
  allowedSpec: string,
  approved: ReadonlySet<string>,
): DependencyJudgement {
  const rules = policy[ecosystem];
  const { normalized } = parsed;
  if (allowance !== undefined) {
    const entry = `${ecosystem}.allow: ${allowance.name}${allowedSpec === '' ? '' : ` ${allowedSpec}`}`;
    const combined = combineVersionSpecs(ecosystem, spec, allowedSpec);
    if (!combined.ok) {
      return denied(DependencyRuleId.INVALID_SPEC, `denied: ${parsed.name} ${combined.problem} (${entry} in ${policy.source})`, `Ask for a version of ${parsed.name} in ${allowedSpec}, or leave version_spec empty.`);
    }
    return { verdict: DependencyVerdict.ALLOWED, reason: `allowed by ${policy.source} (${entry})`, installSpec: combined.spec };
  }
  const builtin = builtinProblem(ecosystem, parsed.name);
  if (builtin !== undefined) return denied(DependencyRuleId.DENIED, `denied: ${builtin}`, `Remove ${parsed.name} from the dependencies; the code imports it as it is.`);
  const lookalike = typosquatTarget(normalized, knownNames(ecosystem, rules));
  if (lookalike !== undefined) {
    return denied(
      DependencyRuleId.TYPOSQUAT,
      `denied: "${parsed.name}" looks like ${lookalike}, a likely typosquat`,
      `If you meant ${lookalike}, use that name; if ${parsed.name} is really the package wanted, add it to ${ecosystem}.allow in ${policy.source}.`,
    );
  }
  if (approved.has(normalized)) return { verdict: DependencyVerdict.ALLOWED, reason: 'allowed: approved for this task by a person', installSpec: spec, approved: true };
  const where = `${ecosystem}.default: ${rules.default}`;
  switch (rules.default) {
    case DefaultDecision.ALLOW:
      return { verdict: DependencyVerdict.ALLOWED, reason: `allowed: not in the allowlist (${where})`, installSpec: spec };
    case DefaultDecision.DENY:
      return denied(DependencyRuleId.DENIED, `denied: not in the allowlist (${where})`, `Use the standard library or a package in ${ecosystem}.allow of ${policy.source}.`);
    default:
      return {
        verdict: DependencyVerdict.NEEDS_APPROVAL,
        reason: `needs approval: not in the allowlist (${where})`,
        installSpec: spec,
        ruleId: DependencyRuleId.NEEDS_APPROVAL,
        remediation: `A person must approve installing ${parsed.name}; to avoid asking, use the standard library or an allowed package.`,
      };
  }
}

/** The most severe action of the findings: block > ask > warn; ALLOW when there are none. */
function verdictOf(findings: readonly DependencyFinding[]): DependencyAction {
  const order: readonly DependencyAction[] = [DependencyAction.BLOCK, DependencyAction.ASK, DependencyAction.WARN];
  return order.find((action) => findings.some((finding) => finding.action === action)) ?? DependencyAction.ALLOW;
}

function denied(ruleId: DependencyRuleId, reason: string, remediation: string): DependencyJudgement {
  return { verdict: DependencyVerdict.DENIED, reason, installSpec: '', ruleId, remediation };
}

function decisionOf(request: DependencyRequest, judgement: DependencyJudgement, declared: boolean, sites: readonly ImportSite[]): DependencyDecision {
  return {
    name: request.name,
    versionSpec: request.versionSpec,
    verdict: judgement.verdict,
    reason: judgement.reason,
    installSpec: judgement.installSpec,
    declared,
    importedAt: sites.map((site) => `${site.path}:${site.line}`),
    approved: judgement.approved === true,
    provided: judgement.provided === true,
    ruleId: judgement.ruleId,
  };
}

const severityOfRule: Readonly<Record<DependencyRuleId, Severity>> = {
  [DependencyRuleId.DENIED]: Severity.HIGH,
  [DependencyRuleId.TYPOSQUAT]: Severity.CRITICAL,
  [DependencyRuleId.NEEDS_APPROVAL]: Severity.MEDIUM,
  [DependencyRuleId.UNDECLARED_IMPORT]: Severity.HIGH,
  [DependencyRuleId.INVALID_SPEC]: Severity.MEDIUM,
};

/** The finding of a declared package that is not simply allowed. */
function declaredFinding(ecosystem: Ecosystem, name: string, judgement: DependencyJudgement): DependencyFinding | undefined {
  if (judgement.ruleId === undefined) return undefined;
  const needsApproval = judgement.verdict === DependencyVerdict.NEEDS_APPROVAL;
  return {
    ruleId: judgement.ruleId,
    severity: severityOfRule[judgement.ruleId],
    confidence: judgement.ruleId === DependencyRuleId.TYPOSQUAT ? Confidence.MEDIUM : Confidence.HIGH,
    action: needsApproval ? DependencyAction.ASK : DependencyAction.BLOCK,
    path: '',
    line: 0,
    column: 0,
    message: `${packageLabel(ecosystem)} ${name}: ${judgement.reason}`,
    snippet: capSnippet(name),
    remediation: judgement.remediation ?? '',
  };
}

/**
 * The findings of a package the code imports and the plan does not declare:
 * a warning when it is allowed (it still has to be installed), a question
 * for a person when it needs approval, a block when it is denied (plus the
 * denial's own finding).
 */
function undeclaredFindings(ecosystem: Ecosystem, imported: ImportedPackage, judgement: DependencyJudgement, first: ImportSite): DependencyFinding[] {
  if (judgement.provided === true) return [];
  const at = `${first.path}:${first.line}`;
  const location = { path: first.path, line: first.line, column: first.column, snippet: capSnippet(imported.name) };
  const topModule = imported.module.split('.')[0] ?? imported.module;
  const shownModule = ecosystem === Ecosystem.PYTHON && normalizePackageName(ecosystem, topModule) !== normalizePackageName(ecosystem, imported.name);
  const label = `${packageLabel(ecosystem)} ${imported.name}${shownModule ? ` (module ${topModule})` : ''}`;
  if (judgement.verdict === DependencyVerdict.ALLOWED) {
    return [
      {
        ...location,
        ruleId: DependencyRuleId.UNDECLARED_IMPORT,
        severity: Severity.LOW,
        confidence: Confidence.HIGH,
        action: DependencyAction.WARN,
        message: `${label} is imported at ${at} but the plan does not declare it; ${judgement.reason}`,
        remediation: `Declare ${imported.name} in the plan's dependencies so it is installed.`,
      },
    ];
  }
  const findings: DependencyFinding[] = [];
  if (judgement.verdict === DependencyVerdict.DENIED && judgement.ruleId !== undefined) {
    findings.push({
      ...location,
      ruleId: judgement.ruleId,
      severity: severityOfRule[judgement.ruleId],
      confidence: judgement.ruleId === DependencyRuleId.TYPOSQUAT ? Confidence.MEDIUM : Confidence.HIGH,
      action: DependencyAction.BLOCK,
      message: `${label}, imported at ${at}: ${judgement.reason}`,
      remediation: judgement.remediation ?? '',
    });
  }
  // A package the policy asks about is asked about here too: a person decides, as for a declared one.
  const ask = judgement.verdict === DependencyVerdict.NEEDS_APPROVAL;
  findings.push({
    ...location,
    ruleId: DependencyRuleId.UNDECLARED_IMPORT,
    severity: severityOfRule[DependencyRuleId.UNDECLARED_IMPORT],
    confidence: Confidence.HIGH,
    action: ask ? DependencyAction.ASK : DependencyAction.BLOCK,
    message: ask
      ? `${label} is imported at ${at} but the plan does not declare it, and it needs a person's approval (${judgement.reason})`
      : `${label} is imported at ${at} but the plan does not declare it, and it is not allowed (${judgement.reason})`,
    remediation: ask ? `A person decides whether ${imported.name} is installed for this task; if refused, rewrite the code without it.` : `Do not use ${imported.name}: rewrite the code without it.`,
  });
  return findings;
}

function packageLabel(ecosystem: Ecosystem): string {
  return ecosystem === Ecosystem.PYTHON ? 'Python package' : 'npm package';
}

/** Longest package name a finding's snippet carries. */
const maxSnippetLength = 200;

function capSnippet(text: string): string {
  return text.length <= maxSnippetLength ? text : `${text.slice(0, maxSnippetLength - 1)}…`;
}

/** Why a name of the standard library is no package to install, when it is one. */
function builtinProblem(ecosystem: Ecosystem, name: string): string | undefined {
  if (ecosystem === Ecosystem.PYTHON) {
    return pythonStdlibModules.has(name) || pythonStdlibModules.has(name.toLowerCase())
      ? `${name} is part of the Python standard library; import it, do not install it`
      : undefined;
  }
  return isNodeBuiltin(name.toLowerCase()) ? `${name} is a Node.js built-in module (node:${name.toLowerCase()}); import it, do not install it` : undefined;
}

const knownCache = new WeakMap<EcosystemPolicy, readonly string[]>();

/** What a typosquat would imitate: the allowlist, `provided` and the well-known packages, normalised. */
function knownNames(ecosystem: Ecosystem, rules: EcosystemPolicy): readonly string[] {
  let known = knownCache.get(rules);
  if (known === undefined) {
    known = [...new Set([...rules.allow.map((entry) => entry.name), ...rules.provided, ...wellKnownPackages[ecosystem]].map((name) => normalizePackageName(ecosystem, name)))];
    knownCache.set(rules, known);
  }
  return known;
}

/** The name without extras, for comparing; the raw text when it does not parse (it then matches nothing). */
function parsedName(ecosystem: Ecosystem, raw: string): string {
  const parsed = parsePackageName(ecosystem, raw);
  return isNameProblem(parsed) ? raw.trim() : parsed.name;
}

/**
 * Refuses a request over the limits before any work is done: more than 200
 * dependencies or 1,000 approved names, an empty name, a name over 214
 * characters or a version specifier over 256.
 *
 * @throws AppError INVALID_ARGUMENT saying which entry and what to send instead.
 */
export function checkDependencyLimits(input: Pick<DependencyCheckInput, 'dependencies' | 'approved'>): void {
  if (input.dependencies.length > maxDependencies) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `${input.dependencies.length} dependencies sent; CheckDependencies takes at most ${maxDependencies} per call: declare only the packages the code needs`);
  }
  if (input.approved.length > maxApprovedNames) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `${input.approved.length} approved names sent; CheckDependencies takes at most ${maxApprovedNames}: send the approvals of this task only`);
  }
  input.dependencies.forEach((dependency, index) => {
    const name = dependency.name.trim();
    if (name === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, `dependencies[${index}].name is empty: every dependency needs the package's name, e.g. "requests" or "zod"`);
    if (name.length > maxPackageNameLength) {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, `dependencies[${index}].name is ${name.length} characters; package names have at most ${maxPackageNameLength}: send the name only, without a version or URL`);
    }
    if (dependency.versionSpec.length > maxVersionSpecLength) {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, `dependencies[${index}].version_spec is ${dependency.versionSpec.length} characters; at most ${maxVersionSpecLength}: send a version range such as ">=2,<3" or "^4"`);
    }
  });
  const longApproved = input.approved.findIndex((name) => name.length > maxPackageNameLength);
  if (longApproved >= 0) throw new AppError(ErrorCode.INVALID_ARGUMENT, `approved[${longApproved}] is over ${maxPackageNameLength} characters: send package names only`);
}
