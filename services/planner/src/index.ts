import type { CallContext } from '@ratchet/bus';
import type { CreatePlanRequest, CreatePlanResponse, RepromptRequest, RepromptResponse } from '@ratchet/contracts';
import type { Prompts } from '@ratchet/agent';
import type { RoleModel } from '@ratchet/llm';
import { createPlanHandler } from './handlers/create-plan';
import { repromptHandler } from './handlers/reprompt';

export { planReplySchema } from './domain/plan-reply';
export { maxQuestionsPerReply, nextQuestionIds, specReplySchema, toSpec } from './domain/spec-reply';
export type { RepromptReply } from './domain/spec-reply';
export { filesForPlanner, plannerFilesTokens, replanSection } from './handlers/create-plan';
export { formatAnswered, questionRule, reprompterAnswerTokens, reprompterGoalTokens } from './handlers/reprompt';

export interface PlannerServiceOptions {
  /** The planner role's model (CreatePlan). */
  readonly roleModel: RoleModel;
  /** The reprompter role's model (Reprompt): its own setting in config/models.yaml. */
  readonly reprompterModel: RoleModel;
  readonly prompts: Prompts;
  /** The clock that stamps new questions; default the system clock. */
  readonly now?: () => Date;
}

export interface PlannerService {
  readonly implementation: {
    createPlan(request: CreatePlanRequest, context: CallContext): Promise<CreatePlanResponse>;
    reprompt(request: RepromptRequest, context: CallContext): Promise<RepromptResponse>;
  };
  close(): Promise<void>;
}

/**
 * The planner's RPCs, ready for `hostService`: CreatePlan (the planner
 * role) and Reprompt (the reprompter role, with its own model and prompt).
 *
 * @throws AppError CONFIG_INVALID when the planner or reprompter prompt uses unknown placeholders.
 */
export function createPlannerService(options: PlannerServiceOptions): PlannerService {
  return {
    implementation: {
      createPlan: createPlanHandler(options.roleModel, options.prompts.planner),
      reprompt: repromptHandler(options.reprompterModel, options.prompts.reprompter, options.now),
    },
    close: () => Promise.resolve(),
  };
}
