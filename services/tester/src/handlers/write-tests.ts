import { languageFromProto, testConvention, type RoleBudgetSettings } from '@ratchet/agent';
import { type DefinitionExtractorLoader } from '@ratchet/code-intel';
import { assertPlaceholders, callRole, codeSection, fitPrompt, formatDisputes, formatLessons, formatPlan, formatProfile, formatSpec, goalSection, replySchemaTokens, rolePromptOptions, type RolePrompt, type RolePromptOptions } from '@ratchet/prompting';
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
 * interface (signatures, no bodies) -> test files in the language's
 * framework. The user's acceptance tests are shown but can never be
 * replaced.
 *
 * The prompt is fitted to `settings.promptBudgetTokens` (see
 * `testPromptValues`). A reply that stays invalid after its repair round
 * comes back as `replyFailure`, with the tokens every call used.
 *
 * @throws AppError INVALID_ARGUMENT for a request without goal, language or
 *   plan; RESOURCE_EXHAUSTED when the template alone is over the budget.
 */
export function writeTestsHandler(roleModel: RoleModel, prompt: RolePrompt, settings: RoleBudgetSettings, extractor: DefinitionExtractorLoader) {
  assertPlaceholders('tester', prompt, placeholders);
  return async (request: WriteTestsRequest, context: CallContext): Promise<WriteTestsResponse> => {
    if (request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; describe what the code should do');
    if (request.plan === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'plan is missing; tests are written for a plan');
    const convention = testConvention(languageFromProto(request.language));
    const reserved = new Set([...request.files, ...request.acceptanceTests].map((file) => file.path));
    const schema = testReplySchema(convention, reserved);
    const reply = await callRole({
      role: ChatRole.TESTER,
      roleModel,
      prompt,
      values: testPromptValues(request, prompt, await rolePromptOptions(settings, replySchemaTokens(schema), extractor)),
      schema,
      ...(request.maxTokens > 0 ? { maxTokens: request.maxTokens } : {}),
      signal: context.signal,
    });
    if (!reply.ok) return { tests: [], summary: '', usage: reply.usage, replyFailure: reply.failure };
    return { tests: reply.value.tests, summary: reply.value.summary, usage: reply.usage, replyFailure: undefined };
  };
}

/**
 * The tester's prompt values within `budgetTokens`: goal, spec, profile,
 * plan, lessons, disputes, the interface of the code (signatures, no
 * bodies: every file while they fit, else the files the plan names and the
 * goal's terms point at first, cut short where needed, and a repository map
 * of the rest) and the acceptance tests (whole while they fit, else the
 * relevant ones and a map). What is cut says so.
 *
 * @throws AppError INVALID_ARGUMENT for an unspecified language;
 *   RESOURCE_EXHAUSTED when the template alone is over the budget.
 */
export function testPromptValues(request: WriteTestsRequest, prompt: RolePrompt, options: RolePromptOptions): Readonly<Record<string, string>> {
  const { budgetTokens, extractor } = options;
  const language = languageFromProto(request.language);
  const convention = testConvention(language);
  const planned = [...(request.plan?.files.map((file) => file.path) ?? []), ...(request.plan?.steps.flatMap((step) => step.paths) ?? [])];
  const source = { goal: `${request.goal}\n${request.plan?.summary ?? ''}`, focus: { mentionedPaths: planned }, ...(extractor === undefined ? {} : { extractor }) };
  return fitPrompt(
    prompt,
    [
      goalSection(request.goal, budgetTokens),
      // The spec's acceptance criteria become tests; the profile's test style says how they are written.
      { name: 'spec', text: formatSpec(request.spec), weight: 2 },
      { name: 'profile', text: formatProfile(request.profile) },
      { name: 'language', text: language, fixed: true },
      { name: 'testFramework', text: convention.framework, fixed: true },
      { name: 'testFileRule', text: convention.fileRule, fixed: true },
      { name: 'plan', text: formatPlan(request.plan), weight: 2 },
      // The interface only: tests come from the goal, not from the implementation they check.
      codeSection('files', { ...source, files: request.files, view: (file) => interfaceOf([file])[0]?.content ?? '' }, 4),
      codeSection('acceptanceTests', { ...source, files: request.acceptanceTests }, 2),
      { name: 'lessons', text: formatLessons(request.lessons) },
      { name: 'disputes', text: formatDisputes(request.disputes) },
    ],
    budgetTokens,
    { budgetKey: 'tester.promptBudgetTokens', reservedTokens: options.reservedTokens ?? 0 },
  ).values;
}
