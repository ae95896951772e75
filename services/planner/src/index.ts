import type { CallContext } from '@ratchet/bus';
import type { CreatePlanRequest, CreatePlanResponse } from '@ratchet/contracts';
import type { Prompts } from '@ratchet/agent';
import type { RoleModel } from '@ratchet/llm';
import { createPlanHandler } from './handlers/create-plan';

export { planReplySchema } from './domain/plan-reply';
export { filesForPlanner, plannerFilesTokens, replanSection } from './handlers/create-plan';

export interface PlannerServiceOptions {
  readonly roleModel: RoleModel;
  readonly prompts: Prompts;
}

export interface PlannerService {
  readonly implementation: { createPlan(request: CreatePlanRequest, context: CallContext): Promise<CreatePlanResponse> };
  close(): Promise<void>;
}

/**
 * The planner's RPCs, ready for `hostService`.
 *
 * @throws AppError CONFIG_INVALID when the planner prompt uses unknown placeholders.
 */
export function createPlannerService(options: PlannerServiceOptions): PlannerService {
  return { implementation: { createPlan: createPlanHandler(options.roleModel, options.prompts.planner) }, close: () => Promise.resolve() };
}
