import type { CallContext } from '@ratchet/bus';
import type { CheckCodeRequest, CheckCodeResponse, CheckCommandRequest, CheckCommandResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { loadParsers } from './adapters/grammars';
import { defaultLimits, type AnalysisLimits } from './domain/analyze';
import type { CommandPolicy } from './domain/command-policy';
import { defaultCommandPolicy } from './domain/command-rules';
import type { Parsers } from './domain/syntax';
import { checkCodeHandler } from './handlers/check-code';
import { checkCommandHandler } from './handlers/check-command';

export { loadParsers } from './adapters/grammars';
export { commandPolicyOf, commandsConfigSection, loadCommandPolicy, safetyConfigSchema } from './config';
export type { CommandsSettings } from './config';
export { analyzeFiles, defaultLimits } from './domain/analyze';
export type { AnalysisLimits, SourceText } from './domain/analyze';
export { checkCommand } from './domain/command-check';
export type { CommandRequest } from './domain/command-check';
export { commandsOfArgv, parseCommandLine, ParseProblemKind } from './domain/command-parse';
export type { ParsedCommandLine, ParseProblem, Redirect, SimpleCommand } from './domain/command-parse';
export { PathClass } from './domain/command-paths';
export { CommandDecision, CommandRuleId, decideCommands } from './domain/command-policy';
export type { CommandCheck, CommandFinding, CommandPolicy, CommandRule } from './domain/command-policy';
export { defaultCommandPolicy, defaultCommandRules } from './domain/command-rules';
export type { ShellWord } from './domain/command-words';
export { RuleId, Severity, Verdict, verdictOf } from './domain/findings';
export type { Analysis, Finding } from './domain/findings';
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
}

/** The safety service: its RPC implementation for a host, and the resources to free when the host stops. */
export interface SafetyService {
  /** The domain RPCs, for `hostService`. CheckDependencies is not served yet (callers get UNIMPLEMENTED). */
  readonly implementation: {
    checkCode(request: CheckCodeRequest, context: CallContext): Promise<CheckCodeResponse>;
    checkCommand(request: CheckCommandRequest, context: CallContext): Promise<CheckCommandResponse>;
  };
  /** Frees the parsers it loaded. Idempotent. */
  close(): Promise<void>;
}

/**
 * The safety service's RPCs, ready for `hostService({ name: 'safety',
 * definition: SafetyServiceDefinition, implementation, ... })`. Loads the
 * tree-sitter grammars once, unless `options.parsers` brings them.
 *
 * @throws AppError CONFIG_INVALID when a limit is not a positive integer;
 *   INTERNAL when a grammar's .wasm file cannot be loaded (a broken install).
 */
export async function createSafetyService(options: SafetyServiceOptions = {}): Promise<SafetyService> {
  const limits = resolveLimits(options.limits);
  const parsers = options.parsers ?? (await loadParsers());
  const owned = options.parsers === undefined;
  return {
    implementation: { checkCode: checkCodeHandler(parsers, limits), checkCommand: checkCommandHandler(parsers, options.commandPolicy ?? defaultCommandPolicy) },
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
