import { assertPlaceholders, callRole, formatDisputes, formatFiles, formatLessons, formatPlan, formatProfile, formatSpec, languageFromProto, testConvention, type RolePrompt } from '@ratchet/agent';
import type { CallContext } from '@ratchet/bus';
import type { WriteTestsRequest, WriteTestsResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { ChatRole, type RoleModel } from '@ratchet/llm';
import { interfaceOf } from '../domain/interface';
import { testReplySchema } from '../domain/test-reply';

const placeholders = ['goal', 'spec', 'profile', 'language', 'testFramework', 'testFileRule', 'plan', 'files', 'acceptanceTests', 'lessons', 'disputes'];

/**
 * WriteTests: goal (+ its spec, whose acceptance criteria each become at
 * least one test, and the project profile's test style) + plan + the code's
 * interface (signatures, no bodies) -> test files in the language's framework. The user's acceptance tests are
 * shown but can never be replaced.
 *
 * A reply that stays invalid after its repair round comes back as
 * `replyFailure`, with the tokens every call used.
 *
 * @throws AppError INVALID_ARGUMENT for a request without goal, language or plan.
 */
export function writeTestsHandler(roleModel: RoleModel, prompt: RolePrompt) {
  assertPlaceholders('tester', prompt, placeholders);
  return async (request: WriteTestsRequest, context: CallContext): Promise<WriteTestsResponse> => {
    if (request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; describe what the code should do');
    if (request.plan === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'plan is missing; tests are written for a plan');
    const language = languageFromProto(request.language);
    const convention = testConvention(language);
    const reserved = new Set([...request.files, ...request.acceptanceTests].map((file) => file.path));
    const reply = await callRole({
      role: ChatRole.TESTER,
      roleModel,
      prompt,
      values: {
        goal: request.goal,
        // The spec's acceptance criteria become tests; the profile's test style says how they are written.
        spec: formatSpec(request.spec),
        profile: formatProfile(request.profile),
        language,
        testFramework: convention.framework,
        testFileRule: convention.fileRule,
        plan: formatPlan(request.plan),
        // The interface only: tests come from the goal, not from the implementation they check.
        files: formatFiles(interfaceOf(request.files)),
        acceptanceTests: formatFiles(request.acceptanceTests),
        lessons: formatLessons(request.lessons),
        disputes: formatDisputes(request.disputes),
      },
      schema: testReplySchema(convention, reserved),
      ...(request.maxTokens > 0 ? { maxTokens: request.maxTokens } : {}),
      signal: context.signal,
    });
    if (!reply.ok) return { tests: [], summary: '', usage: reply.usage, replyFailure: reply.failure };
    return { tests: reply.value.tests, summary: reply.value.summary, usage: reply.usage, replyFailure: undefined };
  };
}
