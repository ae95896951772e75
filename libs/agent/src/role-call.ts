import type { Usage } from '@ratchet/contracts';
import { completeStructured, costOf, type ChatRole, type RoleModel } from '@ratchet/llm';
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
}

export interface RoleCallResult<T> {
  readonly value: T;
  readonly usage: Usage;
}

/**
 * One structured model call for an agent role: renders the role's prompt,
 * asks for JSON matching `schema` (with one repair round) and prices the
 * tokens used.
 *
 * @throws whatever `completeStructured` throws (AppError only).
 */
export async function callRole<T>(options: RoleCallOptions<T>): Promise<RoleCallResult<T>> {
  const { roleModel } = options;
  const budget = options.maxTokens !== undefined && options.maxTokens > 0 ? Math.min(options.maxTokens, roleModel.maxTokens) : roleModel.maxTokens;
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
    { schemaName: `${options.role}_reply`, ...(options.signal === undefined ? {} : { signal: options.signal }) },
  );
  return {
    value: result.value,
    usage: {
      promptTokens: result.usage.promptTokens,
      completionTokens: result.usage.completionTokens,
      costUsd: roleModel.price === undefined ? 0 : costOf(result.usage, roleModel.price),
      modelCalls: result.rounds,
    },
  };
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
