import type { CallContext } from '@ratchet/bus';
import type { CheckCodeRequest, CheckCodeResponse } from '@ratchet/contracts';
import { loadParsers } from './adapters/grammars';
import { checkCodeHandler } from './handlers/check-code';

export { loadParsers } from './adapters/grammars';
export type { GrammarName, Parsers } from './adapters/grammars';
export { analyzeFiles, grammarOf, maxFileBytes, maxFiles, verdictOf } from './domain/analyze';
export { escapesWorkspace, RuleId } from './domain/findings';

export interface SafetyService {
  readonly implementation: { checkCode(request: CheckCodeRequest, context: CallContext): Promise<CheckCodeResponse> };
  close(): Promise<void>;
}

/**
 * The safety service's RPCs, ready for `hostService`. Loads the tree-sitter
 * grammars once.
 *
 * @throws Error when a grammar's .wasm file cannot be loaded (a broken install).
 */
export async function createSafetyService(): Promise<SafetyService> {
  const parsers = await loadParsers();
  return {
    implementation: { checkCode: checkCodeHandler(parsers) },
    close: () => {
      parsers.close();
      return Promise.resolve();
    },
  };
}
