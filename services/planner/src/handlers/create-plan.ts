import {
  assertPlaceholders,
  buildRepoMap,
  callRole,
  countTokens,
  formatFiles,
  loadDefinitionExtractor,
  formatLessons,
  formatPlan,
  formatProfile,
  formatSpec,
  languageFromProto,
  testConvention,
  type RolePrompt,
} from '@ratchet/agent';
import type { CallContext } from '@ratchet/bus';
import type { CreatePlanRequest, CreatePlanResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { ChatRole, type RoleModel } from '@ratchet/llm';
import { planReplySchema, planReplyWithTestEditsSchema, toPlan } from '../domain/plan-reply';

/**
 * Tokens the existing files may take in the planner's prompt. Up to it they
 * are shown whole; past it (a workspace task) as a repository map ranked by
 * relevance to the goal: the coder reads the rest through its tools.
 */
export const plannerFilesTokens = 6_000;

/** The files as the planner sees them: whole while they fit `budget`, else a repository map cut to it. */
export async function filesForPlanner(files: CreatePlanRequest['workspace'], goal: string, budget = plannerFilesTokens): Promise<string> {
  const whole = formatFiles(files);
  if (countTokens(whole) <= budget) return whole;
  const extractor = await loadDefinitionExtractor().catch(() => undefined);
  const map = buildRepoMap({ files, goal, budgetTokens: budget, ...(extractor === undefined ? {} : { extractor }) });
  return `(${files.length} files; a map of the most relevant, with their definitions)\n${map.text}`;
}

const placeholders = ['goal', 'spec', 'profile', 'language', 'testFramework', 'languageGuide', 'workspace', 'acceptanceTests', 'testEdits', 'lessons', 'replan'];

/**
 * What the planner is told about changing the acceptance tests: asked to
 * judge whether the goal wants them changed (fixing code until they pass is
 * not), or told they stay as they are.
 */
export function testEditsSection(request: Pick<CreatePlanRequest, 'judgeTestEdits' | 'acceptanceTests'>): string {
  if (request.acceptanceTests.length === 0) return '';
  if (!request.judgeTestEdits) return 'Never change these tests.';
  return [
    'These tests stay protected unless the goal itself asks to change them, for example "update the tests for the new signature" or "the expected value in test_total is wrong: fix the test".',
    'Making failing tests pass, or fixing a bug they reveal, is not asking to change them.',
    "Set changesTests to true only when the goal asks for a change to the tests, with changesTestsReason quoting the goal's words that ask for it; otherwise false and an empty reason.",
  ].join('\n');
}

/**
 * CreatePlan: goal (+ its spec and the project profile, when the task has
 * them) + workspace + lessons (+ the failed plan and why, on a re-plan) -> a
 * plan from the planner model.
 *
 * A reply that stays invalid after its repair round comes back as
 * `replyFailure`, with the tokens every call used.
 *
 * @throws AppError INVALID_ARGUMENT for an empty goal or unspecified language.
 */
export function createPlanHandler(roleModel: RoleModel, prompt: RolePrompt) {
  assertPlaceholders('planner', prompt, placeholders);
  return async (request: CreatePlanRequest, context: CallContext): Promise<CreatePlanResponse> => {
    if (request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; describe what the code should do');
    const language = languageFromProto(request.language);
    const replan = request.replanReason === '' ? '' : replanSection(request);
    const reply = await callRole({
      role: ChatRole.PLANNER,
      roleModel,
      prompt,
      values: {
        goal: request.goal,
        spec: formatSpec(request.spec),
        profile: formatProfile(request.profile),
        language,
        testFramework: testConvention(language).framework,
        languageGuide: testConvention(language).guide,
        workspace: await filesForPlanner(request.workspace, request.goal),
        acceptanceTests: await filesForPlanner(request.acceptanceTests, request.goal),
        testEdits: testEditsSection(request),
        lessons: formatLessons(request.lessons),
        replan,
      },
      schema: request.judgeTestEdits && request.acceptanceTests.length > 0 ? planReplyWithTestEditsSchema : planReplySchema,
      ...(request.maxTokens > 0 ? { maxTokens: request.maxTokens } : {}),
      signal: context.signal,
    });
    if (!reply.ok) return { plan: undefined, usage: reply.usage, replyFailure: reply.failure };
    const plan = toPlan(reply.value, request.language, request.lessons);
    return { plan, usage: reply.usage, replyFailure: undefined };
  };
}

/**
 * What a re-plan is told: why it happens, what actually failed (the
 * assertion and traceback, not a normalised signature), the reflection, and
 * whether the plan itself was wrong. It asks for a new approach only when
 * the reflection says so: most repeated failures are in the code, and a
 * resume or a rejected result says nothing against the plan.
 */
export function replanSection(request: Pick<CreatePlanRequest, 'replanReason' | 'previousPlan' | 'reflection' | 'previousFailure'>): string {
  const reflection = request.reflection;
  const lines = [`This is a re-plan. Why: ${request.replanReason}`, `Previous plan:\n${formatPlan(request.previousPlan)}`];
  if (request.previousFailure.trim() !== '') lines.push(`What failed in the last attempt:\n${request.previousFailure.trim()}`);
  if (reflection !== undefined) lines.push(`Reflection on that failure: ${reflection.rootCause} Fix direction: ${reflection.fixDirection}`);
  lines.push(
    reflection?.replanRecommended === true
      ? 'The reflection says the plan itself is wrong: change the approach where it failed, and keep what worked.'
      : 'Keep the plan where it is right. If the failure is in the code rather than the design, keep the design and make the steps say exactly what to change so the failing tests pass; change the approach only where the plan itself is wrong.',
  );
  return lines.join('\n');
}
