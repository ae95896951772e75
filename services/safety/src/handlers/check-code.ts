import type { CheckCodeRequest, CheckCodeResponse } from '@ratchet/contracts';
import type { Parsers } from '../adapters/grammars';
import { analyzeFiles } from '../domain/analyze';

/** CheckCode: the verdict and findings for a set of files. */
export function checkCodeHandler(parsers: Parsers) {
  // Synchronous work: the call's deadline cannot interrupt it, and a check takes milliseconds.
  return (request: CheckCodeRequest): Promise<CheckCodeResponse> => {
    try {
      return Promise.resolve(analyzeFiles(parsers, request.files));
    } catch (error) {
      return Promise.reject(error as Error);
    }
  };
}
