import { languageFromProto, projectGuide, testConvention, type LanguageName } from '@ratchet/agent';
import { assertPlaceholders, callRole, formatFiles, formatFindings, formatLessons, formatPlan, formatProfile, formatReviewFindings, formatSpec, formatTestReport, type RolePrompt } from '@ratchet/prompting';
import type { CallContext } from '@ratchet/bus';
import type { WriteCodeRequest, WriteCodeResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { ChatRole, type RoleModel } from '@ratchet/llm';
import { applyReply, codeReplySchema } from '../domain/code-reply';

const placeholders = ['goal', 'spec', 'profile', 'language', 'languageGuide', 'plan', 'files', 'tests', 'feedback', 'reviewFindings', 'lessons'];

/** A task's iterations share one schema (same language, same read-only tests), so its JSON Schema is built once. */
const schemas = new Map<string, ReturnType<typeof codeReplySchema>>();
const maxCachedSchemas = 100;

function schemaFor(language: LanguageName, readOnly: readonly string[]) {
  const key = `${language}\n${[...readOnly].sort().join('\n')}`;
  let schema = schemas.get(key);
  if (schema === undefined) {
    if (schemas.size >= maxCachedSchemas) schemas.delete(schemas.keys().next().value as string);
    schema = codeReplySchema(testConvention(language), new Set(readOnly));
    schemas.set(key, schema);
  }
  return schema;
}

/** Most pre-existing failures named in a prompt; the rest are counted. */
const maxPreExistingShown = 20;

/** The tests that failed before any change, for the coder: pre-existing, to be left alone unless the goal is about them. */
function preExistingText(failures: readonly string[]): string {
  if (failures.length === 0) return '';
  const shown = failures.slice(0, maxPreExistingShown).map((id) => `- ${id}`);
  if (failures.length > maxPreExistingShown) shown.push(`- ... and ${failures.length - maxPreExistingShown} more`);
  return [
    `These tests already failed on the project as it was, before any change (pre-existing failures). Fix the ones the goal is about; the others are not yours to fix and do not count against your change, but your change must not make any other test fail:`,
    ...shown,
  ].join('\n');
}

/** What went wrong last time, for the coder: reflection, failing tests, safety findings (review findings have their own section). */
export function feedbackOf(request: WriteCodeRequest): string {
  const parts: string[] = [];
  if (request.reflection !== undefined) {
    parts.push(`Root cause: ${request.reflection.rootCause}`, `Hypothesis: ${request.reflection.hypothesis}`, `What to change: ${request.reflection.fixDirection}`);
  }
  if (request.previousTestReport !== undefined) parts.push(`Test results:\n${formatTestReport(request.previousTestReport)}`);
  if (request.safetyFindings.some((finding) => !finding.preExisting)) parts.push(`The safety check of the previous attempt (fix what blocks):\n${formatFindings(request.safetyFindings)}`);
  const preExisting = preExistingText(request.preExistingFailures);
  // A later attempt goes on from the earlier ones' edits: say which files they touched, so it does not start over blind.
  const earlier = request.earlierChanges.length === 0 ? '' : `Earlier attempts changed these files (their edits are in the workspace now): ${request.earlierChanges.join(', ')}`;
  const first = request.iteration > 1 ? `(attempt ${request.iteration})` : '(first attempt)';
  if (parts.length === 0) return [request.reviewFindings.length > 0 ? '(see the review and audit findings below)' : first, earlier, preExisting].filter((part) => part !== '').join('\n');
  return [...parts, earlier, preExisting].filter((part) => part !== '').join('\n');
}

/**
 * The prompt values both coder modes share: the goal with its spec and
 * profile, the language and its guide, the plan, the blocking review and
 * audit findings, and the lessons.
 */
export function taskPromptValues(request: WriteCodeRequest, language: LanguageName) {
  return {
    goal: request.goal,
    spec: formatSpec(request.spec),
    profile: formatProfile(request.profile),
    language,
    // An existing project is described as it is laid out; a new one gets the language's conventions.
    languageGuide: request.existingProject ? projectGuide(language, [...request.files, ...request.acceptanceTests]) : testConvention(language).guide,
    plan: formatPlan(request.plan),
    reviewFindings: formatReviewFindings(request.reviewFindings),
    lessons: formatLessons(request.lessons),
  };
}

/**
 * WriteCode: plan (+ the task's spec and project profile) + current files +
 * feedback (+ blocking review and audit findings) -> the whole new set of
 * source files. Test files, given in `acceptance_tests`, are read-only.
 *
 * A reply that stays invalid after its repair round comes back as
 * `replyFailure`, with the tokens every call used.
 *
 * @throws AppError INVALID_ARGUMENT for a request without goal, language or plan.
 */
export function writeCodeHandler(roleModel: RoleModel, prompt: RolePrompt) {
  assertPlaceholders('coder', prompt, placeholders);
  return async (request: WriteCodeRequest, context: CallContext): Promise<WriteCodeResponse> => {
    if (request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; describe what the code should do');
    if (request.plan === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'plan is missing; the coder implements a plan from the planner');
    const language = languageFromProto(request.language);
    const schema = schemaFor(language, request.acceptanceTests.map((file) => file.path));
    const reply = await callRole({
      role: ChatRole.CODER,
      roleModel,
      prompt,
      values: {
        ...taskPromptValues(request, language),
        files: formatFiles(request.files),
        tests: formatFiles(request.acceptanceTests),
        feedback: feedbackOf(request),
      },
      schema,
      ...(request.maxTokens > 0 ? { maxTokens: request.maxTokens } : {}),
      signal: context.signal,
    });
    if (!reply.ok) return { files: [], deletedPaths: [], summary: '', dependencies: [], usage: reply.usage, replyFailure: reply.failure, disputedTests: [], toolSteps: [], changedPaths: [] };
    const files = applyReply(request.files, reply.value);
    return { files, deletedPaths: reply.value.deletedPaths, summary: reply.value.summary, dependencies: [], usage: reply.usage, replyFailure: undefined, disputedTests: reply.value.disputedTests, toolSteps: [], changedPaths: [] };
  };
}
