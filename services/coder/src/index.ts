import type { Prompts } from '@ratchet/agent';
import type { CallContext } from '@ratchet/bus';
import type { WriteCodeRequest, WriteCodeResponse } from '@ratchet/contracts';
import type { RoleModel } from '@ratchet/llm';
import { writeCodeHandler } from './handlers/write-code';

export { applyReply, codeReplySchema } from './domain/code-reply';

export interface CoderServiceOptions {
  readonly roleModel: RoleModel;
  readonly prompts: Prompts;
}

export interface CoderService {
  readonly implementation: { writeCode(request: WriteCodeRequest, context: CallContext): Promise<WriteCodeResponse> };
  close(): Promise<void>;
}

/**
 * The coder's RPCs, ready for `hostService`.
 *
 * @throws AppError CONFIG_INVALID when the coder prompt uses unknown placeholders.
 */
export function createCoderService(options: CoderServiceOptions): CoderService {
  return { implementation: { writeCode: writeCodeHandler(options.roleModel, options.prompts.coder) }, close: () => Promise.resolve() };
}
