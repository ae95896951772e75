import { assertPlaceholders, callRole, formatFiles, formatLessons, formatPlan, languageFromProto, testConvention, type RolePrompt } from '@ratchet/agent';
import type { CallContext } from '@ratchet/bus';
import type { WriteTestsRequest, WriteTestsResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { ChatRole, type RoleModel } from '@ratchet/llm';
import { testReplySchema } from '../domain/test-reply';

const placeholders = ['goal', 'language', 'testFramework', 'testFileRule', 'plan', 'files', 'acceptanceTests', 'lessons'];

/**
 * WriteTests: goal + plan + code -> test files in the language's framework.
 * The user's acceptance tests are shown but can never be replaced.
 *
 * @throws AppError INVALID_ARGUMENT for a request without goal, language or
 *   plan, or a model reply that stays invalid after one repair round.
 */
export function writeTestsHandler(roleModel: RoleModel, prompt: RolePrompt) {
  assertPlaceholders('tester', prompt, placeholders);
  return async (request: WriteTestsRequest, context: CallContext): Promise<WriteTestsResponse> => {
    if (request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; describe what the code should do');
    if (request.plan === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'plan is missing; tests are written for a plan');
    const language = languageFromProto(request.language);
    const convention = testConvention(language);
    const reserved = new Set([...request.files, ...request.acceptanceTests].map((file) => file.path));
    const { value, usage } = await callRole({
      role: ChatRole.TESTER,
      roleModel,
      prompt,
      values: {
        goal: request.goal,
        language,
        testFramework: convention.framework,
        testFileRule: convention.fileRule,
        plan: formatPlan(request.plan),
        files: formatFiles(request.files),
        acceptanceTests: formatFiles(request.acceptanceTests),
        lessons: formatLessons(request.lessons),
      },
      schema: testReplySchema(convention, reserved),
      ...(request.maxTokens > 0 ? { maxTokens: request.maxTokens } : {}),
      signal: context.signal,
    });
    return { tests: value.tests, summary: value.summary, usage };
  };
}
