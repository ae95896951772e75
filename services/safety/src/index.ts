import type { CallContext } from '@ratchet/bus';
import type { CheckCodeRequest, CheckCodeResponse, CheckCommandRequest, CheckCommandResponse, CheckDependenciesRequest, CheckDependenciesResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import type { SandboxJobs } from './adapters/bandit-scanner';
import { createEslintScanner } from './adapters/eslint-scanner';
import { loadParsers } from './adapters/grammars';
import { defaultLimits, type AnalysisLimits } from './domain/analyze';
import { BanditMode, defaultCodeCheckSettings, type CodeCheckSettings } from './domain/code-policy';
import type { CommandPolicy } from './domain/command-policy';
import { defaultCommandPolicy } from './domain/command-rules';
import { defaultDependencyPolicy } from './domain/dependency-defaults';
import type { DependencyPolicy } from './domain/dependency-policy';
import type { Parsers } from './domain/syntax';
import { checkCodeHandler } from './handlers/check-code';
import { checkCommandHandler } from './handlers/check-command';
import { checkDependenciesHandler } from './handlers/check-dependencies';

export { runBandit } from './adapters/bandit-scanner';
export type { BanditOutcome, BanditRun, SandboxJobs } from './adapters/bandit-scanner';
export { createEslintScanner } from './adapters/eslint-scanner';
export type { EslintScanner } from './adapters/eslint-scanner';
export { loadParsers } from './adapters/grammars';
export { codeCheckOf, codeConfigSection, commandPolicyOf, commandsConfigSection, loadCodeCheck, loadCommandPolicy, safetyConfigSchema } from './config';
export type { CodeSettings, CommandsSettings } from './config';
export { dependencyConfigFile, dependencyConfigSchema, loadDependencyPolicy } from './dependency-config';
export type { DependencyPolicyOptions } from './dependency-config';
export { defaultDependencyPolicy } from './domain/dependency-defaults';
export { findImportedPackages, importsOfFile, packagesOfImports } from './domain/dependency-imports';
export type { FileImports, ImportSourceFile, ModuleImport } from './domain/dependency-imports';
export { Ecosystem, editDistance, normalizePackageName, parsePackageName, typosquatTarget } from './domain/dependency-names';
export type { NameProblem, PackageName } from './domain/dependency-names';
export {
  checkDependencies,
  checkDependencyLimits,
  DefaultDecision,
  DependencyAction,
  DependencyRuleId,
  DependencyVerdict,
  judgeDependency,
  maxDependencies,
  sandboxImagePackages,
} from './domain/dependency-policy';
export type {
  AllowedPackage,
  DeniedPackage,
  DependencyCheck,
  DependencyCheckInput,
  DependencyDecision,
  DependencyFinding,
  DependencyJudgement,
  DependencyPolicy,
  DependencyRequest,
  EcosystemPolicy,
  ImagePackage,
  ImportedPackage,
  ImportSite,
  SandboxImagePackages,
} from './domain/dependency-policy';
export { combineVersionSpecs, normalizeVersionSpec, versionProblem, versionSatisfies, versionSpecProblem } from './domain/dependency-versions';
export { analyzeFile, analyzeFiles, defaultLimits } from './domain/analyze';
export type { AnalysisLimits, SourceText } from './domain/analyze';
export { banditCommand, banditCwe, parseBanditReport } from './domain/bandit-findings';
export type { BanditError, BanditReport } from './domain/bandit-findings';
export { actionOf, applyPolicy, BanditMode, CodeAction, defaultCodeCheckSettings, defaultCodePolicy, defaultCodeRules } from './domain/code-policy';
export type { CodeCheckSettings, CodePolicy, CodeRule, Threshold } from './domain/code-policy';
export { checkCommand } from './domain/command-check';
export type { CommandRequest } from './domain/command-check';
export { commandsOfArgv, parseCommandLine, ParseProblemKind } from './domain/command-parse';
export type { ParsedCommandLine, ParseProblem, Redirect, SimpleCommand } from './domain/command-parse';
export { PathClass } from './domain/command-paths';
export { CommandDecision, CommandRuleId, decideCommands } from './domain/command-policy';
export type { CommandCheck, CommandFinding, CommandPolicy, CommandRule } from './domain/command-policy';
export { defaultCommandPolicy, defaultCommandRules } from './domain/command-rules';
export type { ShellWord } from './domain/command-words';
export { detectionOfEslintMessage, EslintRule, eslintRulePrefix, eslintRuleTexts } from './domain/eslint-findings';
export type { EslintMessage } from './domain/eslint-findings';
export { Confidence, RuleId, ruleTexts, Severity, Tool, Verdict, verdictOf } from './domain/findings';
export type { Analysis, Detection, Finding } from './domain/findings';
export { Grammar, grammarOf } from './domain/syntax';
export type { Parsers } from './domain/syntax';
export { escapesWorkspace } from './domain/workspace-paths';

/** How `createSafetyService` is set up; every field is optional. */
export interface SafetyServiceOptions {
  /**
   * Parsers already loaded with `loadParsers()`, to share one set between
   * instances; the service does not close them. Default: loaded by
   * `createSafetyService` and closed by `close()`.
   */
  readonly parsers?: Parsers;
  /** Overrides of `defaultLimits` (200 files, 1 MB per file, 10 MB in all, 500 findings listed). */
  readonly limits?: Partial<AnalysisLimits>;
  /**
   * The policy of CheckCommand, e.g. from `loadCommandPolicy(configDir)` or
   * `commandPolicyOf(config.commands)`. Default: `defaultCommandPolicy`, the
   * rules config/safety.yaml writes out.
   */
  readonly commandPolicy?: CommandPolicy;
  /**
   * The policy of CheckDependencies, e.g. from `loadDependencyPolicy(configDir)`.
   * Default: `defaultDependencyPolicy`, the rules config/dependencies.yaml writes out.
   */
  readonly dependencyPolicy?: DependencyPolicy;
  /**
   * CheckCode's scanners and policy, e.g. from `loadCodeCheck(configDir)` or
   * `codeCheckOf(config.code)`. Default: `defaultCodeCheckSettings`, what
   * config/safety.yaml's `code` section writes out.
   */
  readonly code?: CodeCheckSettings;
  /**
   * Where CheckCode sends its Bandit job: the sandbox runner's RPC client
   * (embedded) or a caller of the sandbox job queue (distributed). Unset:
   * Python files are checked without Bandit.
   */
  readonly sandbox?: SandboxJobs;
}

/** The safety service: its RPC implementation for a host, and the resources to free when the host stops. */
export interface SafetyService {
  /** The domain RPCs, for `hostService`. */
  readonly implementation: {
    checkCode(request: CheckCodeRequest, context: CallContext): Promise<CheckCodeResponse>;
    checkCommand(request: CheckCommandRequest, context: CallContext): Promise<CheckCommandResponse>;
    checkDependencies(request: CheckDependenciesRequest, context: CallContext): Promise<CheckDependenciesResponse>;
  };
  /** Frees the parsers it loaded. Idempotent. */
  close(): Promise<void>;
}

/**
 * The safety service's RPCs, ready for `hostService({ name: 'safety',
 * definition: SafetyServiceDefinition, implementation, ... })`. Loads the
 * tree-sitter grammars once, unless `options.parsers` brings them.
 *
 * @throws AppError CONFIG_INVALID when a limit is not a positive integer, or
 *   when Bandit is required and there is no sandbox; INTERNAL when a
 *   grammar's .wasm file cannot be loaded (a broken install).
 */
export async function createSafetyService(options: SafetyServiceOptions = {}): Promise<SafetyService> {
  const limits = resolveLimits(options.limits);
  const code = options.code ?? defaultCodeCheckSettings;
  if (code.bandit === BanditMode.REQUIRED && options.sandbox === undefined) {
    throw new AppError(ErrorCode.CONFIG_INVALID, 'code.bandit is "required" but the safety service has no sandbox to run Bandit in: give createSafetyService a sandbox, or set code.bandit (RATCHET_CODE_BANDIT) to auto or off');
  }
  const parsers = options.parsers ?? (await loadParsers());
  const owned = options.parsers === undefined;
  const eslint = code.eslint ? createEslintScanner() : undefined;
  return {
    implementation: {
      checkCode: checkCodeHandler({ parsers, limits, settings: code, ...(eslint === undefined ? {} : { eslint }), ...(options.sandbox === undefined ? {} : { sandbox: options.sandbox }) }),
      checkCommand: checkCommandHandler(parsers, options.commandPolicy ?? defaultCommandPolicy),
      checkDependencies: checkDependenciesHandler(parsers, options.dependencyPolicy ?? defaultDependencyPolicy, limits),
    },
    close: () => {
      if (owned) parsers.close();
      return Promise.resolve();
    },
  };
}

function resolveLimits(overrides: Partial<AnalysisLimits> = {}): AnalysisLimits {
  const limits = { ...defaultLimits, ...Object.fromEntries(Object.entries(overrides).filter(([, value]) => value !== undefined)) } as AnalysisLimits;
  const bad = Object.entries(limits).filter(([, value]) => !Number.isSafeInteger(value) || value < 1);
  if (bad.length > 0) {
    throw new AppError(ErrorCode.CONFIG_INVALID, `safety limits must be positive integers: ${bad.map(([key, value]) => `${key}=${String(value)}`).join(', ')}`);
  }
  return Object.freeze(limits);
}
