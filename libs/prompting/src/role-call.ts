import type { ReplyFailure, Usage } from '@ratchet/contracts';
import { completeStructured, costOf, StructuredReplyError, type ChatRole, type RoleModel, type StructuredLookups, type TokenUsage } from '@ratchet/llm';
import type { z } from 'zod';
import { renderTemplate, type RolePrompt } from './prompts';

export interface RoleCallOptions<T> {
  readonly role: ChatRole;
  readonly roleModel: RoleModel;
  readonly prompt: RolePrompt;
  readonly values: Readonly<Record<string, string>>;
  readonly schema: z.ZodType<T>;
  /** The caller's remaining token budget; the call asks for at most this many completion tokens. */
  readonly maxTokens?: number;
  readonly signal?: AbortSignal;
  /** Read-only tools the model may call before it replies (see `completeStructured`). */
  readonly lookups?: StructuredLookups;
}

/** A usable reply, or why the reply could not be used; either way, what every call used (rejected replies and the repair round included). */
export type RoleCallResult<T> = { readonly ok: true; readonly value: T; readonly usage: Usage } | { readonly ok: false; readonly failure: ReplyFailure; readonly usage: Usage };

/**
 * One structured model call for an agent role: renders the role's prompt,
 * asks for JSON matching `schema` (with one repair round) and prices the
 * tokens used. A reply that stays unusable (schema, size, or cut at the
 * length limit) is returned as a failure with its usage, so the tokens of
 * rejected replies are counted like any others.
 *
 * @throws whatever `completeStructured` throws (AppError only) besides a rejected reply.
 */
export async function callRole<T>(options: RoleCallOptions<T>): Promise<RoleCallResult<T>> {
  const { roleModel } = options;
  const budget = options.maxTokens !== undefined && options.maxTokens > 0 ? Math.min(options.maxTokens, roleModel.maxTokens) : roleModel.maxTokens;
  const priced = (usage: TokenUsage, calls: number): Usage => ({
    promptTokens: usage.promptTokens,
    completionTokens: usage.completionTokens,
    costUsd: roleModel.price === undefined ? 0 : costOf(usage, roleModel.price),
    modelCalls: calls,
  });
  const result = await completeStructured(
    roleModel.model,
    {
      role: options.role,
      messages: [
        { role: 'system', content: renderTemplate(options.prompt.system, options.values) },
        { role: 'user', content: renderTemplate(options.prompt.user, options.values) },
      ],
      maxTokens: budget,
      temperature: roleModel.temperature,
    },
    options.schema,
    { schemaName: `${options.role}_reply`, ...(options.signal === undefined ? {} : { signal: options.signal }), ...(options.lookups === undefined ? {} : { lookups: options.lookups }) },
  ).catch((error: unknown) => {
    if (error instanceof StructuredReplyError) return error;
    throw error;
  });
  if (result instanceof StructuredReplyError) return { ok: false, failure: { message: result.message, truncated: result.truncated }, usage: priced(result.usage, result.rounds) };
  return { ok: true, value: result.value, usage: priced(result.usage, result.rounds) };
}

/** Sums usages. */
export function sumUsage(...usages: readonly (Usage | undefined)[]): Usage {
  const total = { promptTokens: 0, completionTokens: 0, costUsd: 0, modelCalls: 0 };
  for (const usage of usages) {
    if (usage === undefined) continue;
    total.promptTokens += usage.promptTokens;
    total.completionTokens += usage.completionTokens;
    total.costUsd += usage.costUsd;
    total.modelCalls += usage.modelCalls;
  }
  return total;
}
