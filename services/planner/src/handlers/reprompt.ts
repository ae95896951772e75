import { assertPlaceholders, callRole, countTokens, formatProfile, goalForPrompt, languageFromProto, truncateToTokens, type RolePrompt } from '@ratchet/agent';
import type { CallContext } from '@ratchet/bus';
import type { ClarifyingQuestion, RepromptRequest, RepromptResponse } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { ChatRole, type RoleModel } from '@ratchet/llm';
import { maxQuestionsPerReply, nextQuestionIds, specReplySchema, toSpec } from '../domain/spec-reply';
import { filesForPlanner } from './create-plan';

const placeholders = ['goal', 'language', 'profile', 'workspace', 'acceptanceTests', 'answered', 'questionRule'];

/** Tokens of the goal the reprompter's prompt holds; the rest is cut with a note (the orchestrator keeps the whole goal). */
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
 * A goal longer than `reprompterGoalTokens` is cut in the prompt with a
 * note; the caller keeps the whole goal.
 *
 * A reply that stays invalid after its repair round comes back as
 * `replyFailure`, with the tokens every call used.
 *
 * @throws AppError INVALID_ARGUMENT for an empty goal or unspecified language.
 */
export function repromptHandler(roleModel: RoleModel, prompt: RolePrompt, now: () => Date = () => new Date()) {
  assertPlaceholders('reprompter', prompt, placeholders);
  return async (request: RepromptRequest, context: CallContext): Promise<RepromptResponse> => {
    if (request.goal.trim() === '') {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; describe what the program should do, for example "a CLI that keeps a todo list in a JSON file"');
    }
    const language = languageFromProto(request.language);
    const reply = await callRole({
      role: ChatRole.REPROMPTER,
      roleModel,
      prompt,
      values: {
        goal: goalForPrompt(request.goal, reprompterGoalTokens),
        language,
        profile: formatProfile(request.profile),
        workspace: await filesForPlanner(request.workspace, request.goal.slice(0, 10_000)),
        acceptanceTests: await filesForPlanner(request.acceptanceTests, request.goal.slice(0, 10_000)),
        answered: formatAnswered(request.answered),
        questionRule: questionRule(request.maxQuestions),
      },
      schema: specReplySchema({ maxQuestions: request.maxQuestions, asked: request.answered.map((question) => question.question) }),
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
