import {
  assertPlaceholders,
  callRole,
  formatFiles,
  formatLessons,
  formatPlan,
  languageFromProto,
  testConvention,
  type RolePrompt,
} from '@ratchet/agent';
import type { CallContext } from '@ratchet/bus';
import type { CreatePlanRequest, CreatePlanResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { ChatRole, type RoleModel } from '@ratchet/llm';
import { planReplySchema, toPlan } from '../domain/plan-reply';

const placeholders = ['goal', 'language', 'testFramework', 'workspace', 'acceptanceTests', 'lessons', 'replan'];

/**
 * CreatePlan: goal + workspace + lessons (+ the failed plan and why, on a
 * re-plan) -> a plan from the planner model.
 *
 * @throws AppError INVALID_ARGUMENT for an empty goal or unspecified language,
 *   or when the model's reply stays invalid after one repair round.
 */
export function createPlanHandler(roleModel: RoleModel, prompt: RolePrompt) {
  assertPlaceholders('planner', prompt, placeholders);
  return async (request: CreatePlanRequest, context: CallContext): Promise<CreatePlanResponse> => {
    if (request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; describe what the code should do');
    const language = languageFromProto(request.language);
    const replan =
      request.replanReason === ''
        ? ''
        : `This is a re-plan. The previous plan failed: ${request.replanReason}\nPrevious plan:\n${formatPlan(request.previousPlan)}\n` +
          (request.reflection === undefined ? '' : `Reflection on the failure: ${request.reflection.rootCause} ${request.reflection.fixDirection}\n`) +
          'Choose a different approach where the previous one kept failing.';
    const { value, usage } = await callRole({
      role: ChatRole.PLANNER,
      roleModel,
      prompt,
      values: {
        goal: request.goal,
        language,
        testFramework: testConvention(language).framework,
        workspace: formatFiles(request.workspace),
        acceptanceTests: formatFiles(request.acceptanceTests),
        lessons: formatLessons(request.lessons),
        replan,
      },
      schema: planReplySchema,
      ...(request.maxTokens > 0 ? { maxTokens: request.maxTokens } : {}),
      signal: context.signal,
    });
    const plan = toPlan(value, request.language, new Set(request.lessons.map((lesson) => lesson.id)));
    return { plan, usage };
  };
}
