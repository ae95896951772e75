import { countTokens, languageFromProto, projectGuide, testConvention, type PlannerSettings } from '@ratchet/agent';
import { type DefinitionExtractorLoader, type RepoMapFocus } from '@ratchet/code-intel';
import { assertPlaceholders, callRole, codeSection, cutText, fitPrompt, formatLessons, formatPlan, formatProfile, formatSpec, goalSection, lookupTools, replySchemaTokens, rolePromptOptions, WorkspaceLookup, type PromptSection, type RolePrompt, type RolePromptOptions } from '@ratchet/prompting';
import type { CallContext } from '@ratchet/bus';
import type { CreatePlanRequest, CreatePlanResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { ChatRole, ToolProtocol, type RoleModel } from '@ratchet/llm';
import { planReplySchema, planReplyWithTestEditsSchema, toPlan } from '../domain/plan-reply';

const placeholders = ['goal', 'spec', 'profile', 'language', 'testFramework', 'languageGuide', 'workspace', 'acceptanceTests', 'testEdits', 'lessons', 'replan', 'lookups'];

/** Model calls that may look things up before the plan: a reply may ask for several lookups at once. */
const lookupRounds = 3;
/** What one lookup round adds beside its results: the assistant's calls and the message framing, tokens per call. */
const lookupCallTokens = 60;

/**
 * Whether the planner may look at the project before it plans, and with
 * what share of its budget: only for a workspace task (a greenfield one is
 * shown whole), with lookups on, and for a model offered tools natively
 * (the text protocol's one-call-per-reply format would clash with a JSON
 * reply). The share is at most half the budget.
 */
export function lookupShare(request: Pick<CreatePlanRequest, 'workspace'>, settings: PlannerSettings, roleModel: Pick<RoleModel, 'toolProtocol'>): { calls: number; tokens: number; reserved: number } | undefined {
  if (request.workspace.length === 0 || settings.lookupCalls === 0 || settings.lookupTokens === 0) return undefined;
  if ((roleModel.toolProtocol ?? ToolProtocol.NATIVE) !== ToolProtocol.NATIVE) return undefined;
  const tokens = Math.min(settings.lookupTokens, Math.floor(settings.promptBudgetTokens / 2));
  const reserved = tokens + countTokens(JSON.stringify(lookupTools)) + settings.lookupCalls * lookupCallTokens;
  return { calls: settings.lookupCalls, tokens, reserved };
}

/** What the planner is told about its lookups; empty when it has none. */
export function lookupsSection(share: { calls: number } | undefined): string {
  if (share === undefined) return '';
  return [
    `Before you plan you may look at the project: read_file shows a file's lines, search finds a regular expression in every file. The code above is only part of it.`,
    `Up to ${share.calls} lookups in all, several in one reply, in at most ${lookupRounds} replies; then reply with the plan. Look up what the plan depends on (the function to change, the tests that pin it, how the tests are run), not what is already shown.`,
  ].join('\n');
}

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
 * The prompt is fitted to `settings.promptBudgetTokens` (see
 * `planPromptValues`). A reply that stays invalid after its repair round
 * comes back as `replyFailure`, with the tokens every call used.
 *
 * @throws AppError INVALID_ARGUMENT for an empty goal or unspecified
 *   language; RESOURCE_EXHAUSTED when the template alone is over the budget.
 */
export function createPlanHandler(roleModel: RoleModel, prompt: RolePrompt, settings: PlannerSettings, extractor: DefinitionExtractorLoader) {
  assertPlaceholders('planner', prompt, placeholders);
  return async (request: CreatePlanRequest, context: CallContext): Promise<CreatePlanResponse> => {
    if (request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; describe what the code should do');
    languageFromProto(request.language);
    const schema = request.judgeTestEdits && request.acceptanceTests.length > 0 ? planReplyWithTestEditsSchema : planReplySchema;
    const share = lookupShare(request, settings, roleModel);
    const lookup = share === undefined ? undefined : new WorkspaceLookup([...request.workspace, ...request.acceptanceTests], { maxCalls: share.calls, maxTokens: share.tokens });
    const options = await rolePromptOptions(settings, replySchemaTokens(schema) + (share?.reserved ?? 0), extractor);
    const reply = await callRole({
      role: ChatRole.PLANNER,
      roleModel,
      prompt,
      values: planPromptValues(request, prompt, options, lookupsSection(share)),
      schema,
      ...(request.maxTokens > 0 ? { maxTokens: request.maxTokens } : {}),
      signal: context.signal,
      ...(lookup === undefined ? {} : { lookups: { tools: lookupTools, maxRounds: lookupRounds, run: (call) => lookup.run(call) } }),
    });
    const lookups = [...(lookup?.steps ?? [])];
    if (!reply.ok) return { plan: undefined, usage: reply.usage, replyFailure: reply.failure, lookups };
    const plan = toPlan(reply.value, request.language, request.lessons);
    return { plan, usage: reply.usage, replyFailure: undefined, lookups };
  };
}

/**
 * The planner's prompt values within `budgetTokens`: the goal (at most a
 * quarter of the budget), spec, profile, rules, lessons, a re-plan's
 * evidence, and the workspace and acceptance tests as `codeSection` shows
 * them (on a re-plan, the files and lines the failure names first), and
 * what it is told about its lookups (`lookupsSection`). What is cut says so.
 *
 * @throws AppError INVALID_ARGUMENT for an unspecified language;
 *   RESOURCE_EXHAUSTED when the template alone is over the budget.
 */
export function planPromptValues(request: CreatePlanRequest, prompt: RolePrompt, options: RolePromptOptions, lookups = ''): Readonly<Record<string, string>> {
  const { budgetTokens, extractor } = options;
  const language = languageFromProto(request.language);
  const replan = request.replanReason === '' ? '' : replanSection(request);
  const focus: RepoMapFocus = request.replanReason === '' ? {} : { errorText: [request.previousFailure, request.reflection?.rootCause ?? '', request.reflection?.fixDirection ?? ''].join('\n') };
  const source = { goal: request.goal, focus, ...(extractor === undefined ? {} : { extractor }) };
  const sections: PromptSection[] = [
    goalSection(request.goal, budgetTokens, { weight: 3 }),
    { name: 'spec', text: formatSpec(request.spec), weight: 2 },
    { name: 'profile', text: formatProfile(request.profile) },
    { name: 'language', text: language, fixed: true },
    { name: 'testFramework', text: testConvention(language).framework, fixed: true },
    // An existing project is described as it is laid out (its test directories and runner configuration), not by the greenfield convention.
    { name: 'languageGuide', text: request.workspace.length === 0 ? testConvention(language).guide : projectGuide(language, [...request.workspace, ...request.acceptanceTests]), fixed: true },
    // Whole while they fit (a greenfield task's files); else the files most relevant to the goal and a map of the rest.
    codeSection('workspace', { ...source, files: request.workspace }, 4),
    codeSection('acceptanceTests', { ...source, files: request.acceptanceTests }, 2),
    { name: 'testEdits', text: testEditsSection(request), fixed: true },
    { name: 'lessons', text: formatLessons(request.lessons) },
    { name: 'replan', text: replan, fit: (tokens) => cutText(replan, tokens, { label: 'the re-plan evidence' }), weight: 2 },
    { name: 'lookups', text: lookups, fixed: true },
  ];
  return fitPrompt(prompt, sections, budgetTokens, { budgetKey: 'planner.promptBudgetTokens', reservedTokens: options.reservedTokens ?? 0 }).values;
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
