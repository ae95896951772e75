import type { CallContext } from '@ratchet/bus';
import type { CreatePlanRequest, CreatePlanResponse, RepromptRequest, RepromptResponse } from '@ratchet/contracts';
import { plannerConfigSection, reprompterConfigSection, type PlannerSettings, type RoleBudgetSettings } from '@ratchet/agent';
import { definitionExtractorLoader, type DefinitionExtractorLoader } from '@ratchet/code-intel';
import { type Prompts } from '@ratchet/prompting';
import type { RoleModel } from '@ratchet/llm';
import { createPlanHandler } from './handlers/create-plan';
import { repromptHandler } from './handlers/reprompt';

export { planReplySchema } from './domain/plan-reply';
export { maxQuestionsPerReply, nextQuestionIds, specReplySchema, toSpec } from './domain/spec-reply';
export type { RepromptReply } from './domain/spec-reply';
export { planPromptValues, replanSection, testEditsSection } from './handlers/create-plan';
export { formatAnswered, questionRule, repromptPromptValues, reprompterAnswerTokens, reprompterGoalTokens } from './handlers/reprompt';

export interface PlannerServiceOptions {
  /** The planner role's model (CreatePlan). */
  readonly roleModel: RoleModel;
  /** The reprompter role's model (Reprompt): its own setting in config/models.yaml. */
  readonly reprompterModel: RoleModel;
  readonly prompts: Prompts;
  /** The clock that stamps new questions; default the system clock. */
  readonly now?: () => Date;
  /** Each role's prompt budget (the `planner` and `reprompter` config sections); default each section's default. */
  readonly settings?: PlannerServiceSettings;
  /** Outlines files for the repository maps; default the tree-sitter extractor, loaded on first use. */
  readonly extractor?: DefinitionExtractorLoader;
}

/** The settings of the roles the planner serves: prompt budgets, and the planner's lookups. */
export interface PlannerServiceSettings {
  readonly planner?: PlannerSettings;
  readonly reprompter?: RoleBudgetSettings;
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
 * role) and Reprompt (the reprompter role, with its own model, prompt and
 * prompt budget).
 *
 * @throws AppError CONFIG_INVALID when the planner or reprompter prompt uses unknown placeholders.
 */
export function createPlannerService(options: PlannerServiceOptions): PlannerService {
  const settings = options.settings ?? {};
  const extractor = options.extractor ?? definitionExtractorLoader();
  return {
    implementation: {
      createPlan: createPlanHandler(options.roleModel, options.prompts.planner, settings.planner ?? plannerConfigSection.parse({}), extractor),
      reprompt: repromptHandler(options.reprompterModel, options.prompts.reprompter, settings.reprompter ?? reprompterConfigSection.parse({}), extractor, options.now),
    },
    close: () => Promise.resolve(),
  };
}
