import type { CallContext } from '@ratchet/bus';
import type { CheckCodeRequest, CheckCodeResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { loadParsers } from './adapters/grammars';
import { defaultLimits, type AnalysisLimits } from './domain/analyze';
import type { Parsers } from './domain/syntax';
import { checkCodeHandler } from './handlers/check-code';

export { loadParsers } from './adapters/grammars';
export { analyzeFiles, defaultLimits } from './domain/analyze';
export type { AnalysisLimits, SourceText } from './domain/analyze';
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
}

/** The safety service: its RPC implementation for a host, and the resources to free when the host stops. */
export interface SafetyService {
  /** The domain RPCs, for `hostService`. CheckCommand and CheckDependencies are not served yet (callers get UNIMPLEMENTED). */
  readonly implementation: { checkCode(request: CheckCodeRequest, context: CallContext): Promise<CheckCodeResponse> };
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
    implementation: { checkCode: checkCodeHandler(parsers, limits) },
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
