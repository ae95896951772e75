import type { Prompts } from '@ratchet/agent';
import type { CallContext } from '@ratchet/bus';
import type { ReflectRequest, ReflectResponse } from '@ratchet/contracts';
import type { RoleModel } from '@ratchet/llm';
import { reflectHandler } from './handlers/reflect';
export { outputForPrompt } from './handlers/reflect';

export { reflectionReplySchema } from './domain/reflection-reply';

export interface ReflectorServiceOptions {
  readonly roleModel: RoleModel;
  readonly prompts: Prompts;
}

export interface ReflectorService {
  readonly implementation: { reflect(request: ReflectRequest, context: CallContext): Promise<ReflectResponse> };
  close(): Promise<void>;
}

/**
 * The reflector's RPCs, ready for `hostService`.
 *
 * @throws AppError CONFIG_INVALID when the reflector prompt uses unknown placeholders.
 */
export function createReflectorService(options: ReflectorServiceOptions): ReflectorService {
  return { implementation: { reflect: reflectHandler(options.roleModel, options.prompts.reflector) }, close: () => Promise.resolve() };
}
