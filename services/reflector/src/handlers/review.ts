import { countTokens, languageFromProto, type RoleBudgetSettings } from '@ratchet/agent';
import { assertPlaceholders, callRole, fitPrompt, formatPlan, formatSpec, goalSection, replySchemaTokens, type PromptSection, type RolePrompt } from '@ratchet/prompting';
import type { CallContext } from '@ratchet/bus';
import type { ReviewRequest, ReviewResponse, Usage } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { ChatRole, type RoleModel } from '@ratchet/llm';
import { describeChange, fitChange, type Change } from '../domain/change';
import { fromReview, orderFindings } from '../domain/findings';
import { reviewReplySchema } from '../domain/review-reply';
import { findingToProto } from './proto-enums';

const placeholders = ['goal', 'spec', 'language', 'plan', 'change'];

/** The usage of a phase that did not call the model. */
export const noUsage: Usage = { promptTokens: 0, completionTokens: 0, costUsd: 0, modelCalls: 0 };

/**
 * Review: the change (a unified diff of `base_files` -> `files`, new files
 * whole) read against the goal, spec and plan -> findings with severity,
 * place, category, message and suggestion, most severe first.
 *
 * Findings are checked against the change (see `placeFinding`): a path the
 * change does not have is re-pointed (to the one changed file it names, or
 * to the change as a whole), a line is clamped to its file, and a finding on
 * a file the change does not touch is kept but never blocks. Blocking rule
 * (`reviewFindingBlocks`): high and critical findings block; a medium
 * correctness finding blocks when the reviewer flagged it blocking; nothing
 * else does. Without a change the model is not called.
 *
 * The prompt is fitted to `settings.promptBudgetTokens`: goal, spec and
 * plan, and the diff with the largest share (see `changeSection`). A reply
 * that stays invalid after its repair round comes back as `replyFailure`
 * (no findings), with the tokens every call used.
 *
 * @throws AppError INVALID_ARGUMENT for an empty goal or unspecified
 *   language; RESOURCE_EXHAUSTED when the template alone is over the budget.
 */
export function reviewHandler(roleModel: RoleModel, prompt: RolePrompt, settings: RoleBudgetSettings) {
  assertPlaceholders('reviewer', prompt, placeholders);
  return async (request: ReviewRequest, context: CallContext): Promise<ReviewResponse> => {
    if (request.goal.trim() === '') throw new AppError(ErrorCode.INVALID_ARGUMENT, 'goal is empty; the reviewer reads a change against the goal it is for');
    const language = languageFromProto(request.language);
    const change = describeChange(request.baseFiles, request.files);
    if (change.files.length === 0) return { findings: [], summary: 'Nothing changed, so there is nothing to review.', usage: noUsage, replyFailure: undefined };
    const reply = await callRole({
      role: ChatRole.REVIEWER,
      roleModel,
      prompt,
      values: fitPrompt(
        prompt,
        [
          goalSection(request.goal, settings.promptBudgetTokens),
          { name: 'spec', text: formatSpec(request.spec) },
          { name: 'language', text: language, fixed: true },
          { name: 'plan', text: formatPlan(request.plan) },
          changeSection(change),
        ],
        settings.promptBudgetTokens,
        { budgetKey: 'reviewer.promptBudgetTokens', reservedTokens: replySchemaTokens(reviewReplySchema) },
      ).values,
      schema: reviewReplySchema,
      ...(request.maxTokens > 0 ? { maxTokens: request.maxTokens } : {}),
      signal: context.signal,
    });
    if (!reply.ok) return { findings: [], summary: '', usage: reply.usage, replyFailure: reply.failure };
    const findings = orderFindings(reply.value.findings.map((finding) => fromReview(finding, change)));
    return { findings: findings.map(findingToProto), summary: reply.value.summary, usage: reply.usage, replyFailure: undefined };
  };
}

/** The change as a budgeted section: the diff gets the largest share, cut by whole hunks (see `fitChange`). */
export function changeSection(change: Change): PromptSection {
  return { name: 'change', tokens: countTokens(fitChange(change, Number.MAX_SAFE_INTEGER).text), fit: (tokens) => fitChange(change, tokens).text, weight: 4 };
}
