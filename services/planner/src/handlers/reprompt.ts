import { countTokens, languageFromProto, truncateToTokens, type RoleBudgetSettings } from '@ratchet/agent';
import { type DefinitionExtractorLoader } from '@ratchet/code-intel';
import { assertPlaceholders, callRole, codeSection, fitPrompt, formatProfile, goalSection, replySchemaTokens, rolePromptOptions, type RolePrompt, type RolePromptOptions } from '@ratchet/prompting';
import type { CallContext } from '@ratchet/bus';
import type { ClarifyingQuestion, RepromptRequest, RepromptResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { ChatRole, type RoleModel } from '@ratchet/llm';
import { maxQuestionsPerReply, nextQuestionIds, specReplySchema, toSpec } from '../domain/spec-reply';

const placeholders = ['goal', 'language', 'profile', 'workspace', 'acceptanceTests', 'answered', 'questionRule'];

/** Tokens of the goal the reprompter's prompt holds at most (less when its budget is smaller); the rest is cut with a note (the orchestrator keeps the whole goal). */
export const reprompterGoalTokens = 6_000;

/** Tokens of one answer shown to the reprompter; a pasted document is cut with a note. */
export const reprompterAnswerTokens = 1_000;

/**
 * What the reprompter is told about asking: how many questions it may ask
 * now, or that it must write the spec and state its assumptions.
 */
export function questionRule(maxQuestions: number): string {
  const allowed = Math.max(0, Math.min(maxQuestionsPerReply, Math.floor(maxQuestions)));
  if (allowed === 0) {
    return 'Do not ask questions now: write the spec, with questions empty. Where the goal leaves a choice open, make the most sensible choice and state it under assumptions.';
  }
  return `You may ask at most ${allowed} question${allowed === 1 ? '' : 's'} now, and only ones whose answer changes the result. If the goal is clear enough, write the spec instead, with your choices under assumptions.`;
}

/** The questions asked so far with their answers, for the prompt; `(none)` before the first. */
export function formatAnswered(answered: readonly ClarifyingQuestion[]): string {
  if (answered.length === 0) return '(none)';
  return answered
    .map((question) => {
      const answer = question.answer.trim();
      const shown = countTokens(answer) > reprompterAnswerTokens ? `${truncateToTokens(answer, reprompterAnswerTokens)} [answer cut at ${reprompterAnswerTokens} tokens]` : answer;
      const reply =
        shown === ''
          ? `No answer: use your assumption${question.assumption.trim() === '' ? '' : ` (${question.assumption.trim()})`} and copy it word for word under assumptions.`
          : `Answer: ${shown}`;
      return `${question.questionId === '' ? '-' : `${question.questionId}.`} ${question.question.trim()}\n   ${reply}`;
    })
    .join('\n');
}

/**
 * Reprompt: a goal (with the workspace, acceptance tests, profile and the
 * questions answered so far) -> a structured spec, or up to `max_questions`
 * clarifying questions to ask first. New questions get ids `q<n>` numbered
 * on from the answered ones and are stamped with the time they were asked.
 *
 * The prompt is fitted to `settings.promptBudgetTokens` (see
 * `repromptPromptValues`): a goal longer than `reprompterGoalTokens` (or
 * than its share) is cut in the prompt with a note; the caller keeps the
 * whole goal. A reply that stays invalid after its repair round comes back
 * as `replyFailure`, with the tokens every call used.
 *
 * @throws AppError INVALID_ARGUMENT for an empty goal or unspecified
 *   language; RESOURCE_EXHAUSTED when the template alone is over the budget.
 */
export function repromptHandler(roleModel: RoleModel, prompt: RolePrompt, settings: RoleBudgetSettings, extractor: DefinitionExtractorLoader, now: () => Date = () => new Date()) {
  assertPlaceholders('reprompter', prompt, placeholders);
  return async (request: RepromptRequest, context: CallContext): Promise<RepromptResponse> => {
    if (request.goal.trim() === '') {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; describe what the program should do, for example "a CLI that keeps a todo list in a JSON file"');
    }
    languageFromProto(request.language);
    const schema = specReplySchema({ maxQuestions: request.maxQuestions, asked: request.answered.map((question) => question.question) });
    const reply = await callRole({
      role: ChatRole.REPROMPTER,
      roleModel,
      prompt,
      values: repromptPromptValues(request, prompt, await rolePromptOptions(settings, replySchemaTokens(schema), extractor)),
      schema,
      ...(request.maxTokens > 0 ? { maxTokens: request.maxTokens } : {}),
      signal: context.signal,
    });
    if (!reply.ok) return { spec: undefined, questions: [], usage: reply.usage, replyFailure: reply.failure };
    const { spec, questions } = reply.value;
    if (spec !== null) return { spec: toSpec(spec, request.answered), questions: [], usage: reply.usage, replyFailure: undefined };
    const ids = nextQuestionIds(request.answered, questions.length);
    const askedAt = now();
    return {
      spec: undefined,
      questions: questions.map((question, index) => ({
        questionId: ids[index] ?? `q${request.answered.length + index + 1}`,
        question: question.question,
        why: question.why,
        options: question.options,
        assumption: question.assumption,
        answer: '',
        answeredBy: '',
        askedAt,
        answeredAt: undefined,
      })),
      usage: reply.usage,
      replyFailure: undefined,
    };
  };
}

/**
 * The reprompter's prompt values within `budgetTokens`: the goal (the
 * largest share, at most `reprompterGoalTokens`), the profile, the answers
 * so far, the rule on questions, and the workspace and acceptance tests as
 * the planner sees them (see `codeSection`). What is cut says so.
 *
 * @throws AppError INVALID_ARGUMENT for an unspecified language;
 *   RESOURCE_EXHAUSTED when the template alone is over the budget.
 */
export function repromptPromptValues(request: RepromptRequest, prompt: RolePrompt, options: RolePromptOptions): Readonly<Record<string, string>> {
  const { budgetTokens, extractor } = options;
  // Ranking reads the goal's words; the start of a very long goal names what matters.
  const source = { goal: request.goal.slice(0, 10_000), ...(extractor === undefined ? {} : { extractor }) };
  return fitPrompt(
    prompt,
    [
      goalSection(request.goal, budgetTokens, { maxTokens: reprompterGoalTokens, weight: 4 }),
      { name: 'language', text: languageFromProto(request.language), fixed: true },
      { name: 'profile', text: formatProfile(request.profile) },
      codeSection('workspace', { ...source, files: request.workspace }, 2),
      codeSection('acceptanceTests', { ...source, files: request.acceptanceTests }, 1),
      { name: 'answered', text: formatAnswered(request.answered), weight: 2 },
      { name: 'questionRule', text: questionRule(request.maxQuestions), fixed: true },
    ],
    budgetTokens,
    { budgetKey: 'reprompter.promptBudgetTokens', reservedTokens: options.reservedTokens ?? 0 },
  ).values;
}
