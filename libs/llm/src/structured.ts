import { AppError, ErrorCode } from '@ratchet/errors';
import { z } from 'zod';
import type { ChatCallOptions, ChatMessage, ChatModel, ChatRequest, ChatResponse, TokenUsage } from './domain/chat-model';
import { addUsage } from './domain/cost';

export interface StructuredOptions extends ChatCallOptions {
  /** Replies longer than this many bytes (UTF-8) are rejected before parsing. Default 1 MB (1_000_000). */
  readonly maxReplyBytes?: number;
  /** `responseFormat.name` when the request has none. Default `response`. */
  readonly schemaName?: string;
}

export interface StructuredResult<T> {
  readonly value: T;
  /** Summed over all rounds. */
  readonly usage: TokenUsage;
  /** 1, or 2 when a repair round was needed. */
  readonly rounds: number;
}

const defaultMaxReplyBytes = 1_000_000;

type Attempt<T> = { ok: true; value: T } | { ok: false; problems: string[]; truncated?: boolean };

/**
 * A reply that could not be used, after its repair round (or at once, when
 * it was over the size cap): INVALID_ARGUMENT, with what the calls used, so
 * a caller can count the tokens of rejected replies too.
 */
export class StructuredReplyError extends AppError {
  constructor(
    message: string,
    /** Every round's tokens, the rejected replies included. */
    readonly usage: TokenUsage,
    /** Model calls made: 1 or 2. */
    readonly rounds: number,
    /** The last reply stopped at the token limit (finish_reason "length"). */
    readonly truncated: boolean,
  ) {
    super(ErrorCode.INVALID_ARGUMENT, message);
  }
}

/**
 * Asks `model` for a JSON reply and validates it with `schema`. The reply may
 * be plain JSON or JSON inside a ```json fence. When it does not parse or
 * does not match, the bad reply and the list of problems go back to the model
 * for exactly one repair round. When `request.responseFormat` is absent it is
 * derived from `schema`.
 *
 * @throws AppError INVALID_ARGUMENT when the reply still does not match the
 *   schema after the repair round, or when a reply exceeds `maxReplyBytes`
 *   (default 1 MB); whatever `model.complete` throws.
 */
export async function completeStructured<T>(
  model: ChatModel,
  request: ChatRequest,
  schema: z.ZodType<T>,
  options: StructuredOptions = {},
): Promise<StructuredResult<T>> {
  const { maxReplyBytes = defaultMaxReplyBytes, schemaName = 'response', signal } = options;
  const callOptions: ChatCallOptions = signal === undefined ? {} : { signal };
  const firstRequest: ChatRequest = {
    ...request,
    responseFormat: request.responseFormat ?? { name: schemaName, schema: jsonSchemaOf(schema) },
  };

  const first = await model.complete(firstRequest, callOptions);
  const firstAttempt = parseReply(first, schema, maxReplyBytes, 1);
  if (firstAttempt.ok) return { value: firstAttempt.value, usage: first.usage, rounds: 1 };

  // A reply cut at the token limit is not a schema mistake: the model is asked for a shorter one.
  const repair = firstAttempt.truncated
    ? `Your reply was cut off at the length limit (${request.maxTokens ?? 'the'} tokens) before the JSON was complete. ` +
      'Reply again with a complete JSON object that fits: shorter text, and fewer or smaller files (leave out files that do not need to change).'
    : 'Your reply did not match the required JSON schema:\n' + firstAttempt.problems.map((problem) => `- ${problem}`).join('\n') + '\nReply again with only the corrected JSON object.';
  const repairMessages: ChatMessage[] = [...firstRequest.messages, { role: 'assistant', content: first.content }, { role: 'user', content: repair }];
  const second = await model.complete({ ...firstRequest, messages: repairMessages }, callOptions).catch((error: unknown) => {
    throw new StructuredReplyError(AppError.from(error).message, first.usage, 1, firstAttempt.truncated === true);
  });
  const usage = addUsage(first.usage, second.usage);
  const secondAttempt = parseReply(second, schema, maxReplyBytes, 2, first.usage);
  if (secondAttempt.ok) return { value: secondAttempt.value, usage, rounds: 2 };

  throw new StructuredReplyError(
    secondAttempt.truncated === true
      ? `the ${request.role} model's reply was cut off at the length limit (${request.maxTokens ?? '?'} tokens) twice; give the role a larger maxTokens in config/models.yaml, or a smaller task`
      : `the ${request.role} model's reply did not match the schema "${firstRequest.responseFormat?.name ?? schemaName}" after one repair round: ${secondAttempt.problems.join('; ')}`,
    usage,
    2,
    secondAttempt.truncated === true,
  );
}

/** Converting a schema takes about a millisecond, and roles reuse theirs on every call. */
const jsonSchemas = new WeakMap<z.ZodType, Record<string, unknown>>();

/** The schema as JSON Schema, without the `$schema` dialect marker that some servers reject. */
function jsonSchemaOf(schema: z.ZodType): Record<string, unknown> {
  const cached = jsonSchemas.get(schema);
  if (cached !== undefined) return cached;
  const jsonSchema = { ...(z.toJSONSchema(schema, { unrepresentable: 'any' }) as Record<string, unknown>) };
  delete jsonSchema['$schema'];
  jsonSchemas.set(schema, jsonSchema);
  return jsonSchema;
}

/** Parses one reply; `rounds` and `earlier` (the usage of the rounds before) go into the error of an oversized reply. */
function parseReply<T>(response: ChatResponse, schema: z.ZodType<T>, maxReplyBytes: number, rounds: number, earlier?: TokenUsage): Attempt<T> {
  const size = Buffer.byteLength(response.content, 'utf8');
  if (size > maxReplyBytes) {
    throw new StructuredReplyError(
      `the model's reply is ${size} bytes, over the ${maxReplyBytes}-byte cap for structured replies; lower maxTokens or raise maxReplyBytes`,
      earlier === undefined ? response.usage : addUsage(earlier, response.usage),
      rounds,
      response.finishReason === 'length',
    );
  }
  const truncated = response.finishReason === 'length';
  const extracted = extractJson(response.content);
  if (!extracted.ok) return { ...extracted, truncated };
  const result = schema.safeParse(extracted.value);
  if (result.success) return { ok: true, value: result.data };
  return {
    ok: false,
    truncated,
    problems: result.error.issues.map((issue) => `${issue.path.length === 0 ? '(root)' : issue.path.map(String).join('.')}: ${issue.message}`),
  };
}

const fencePattern = /```(?:json|JSON)?[ \t]*\r?\n([\s\S]*?)```/;

/** Finds the JSON value in a reply: the whole text, a ```json fence, or the outermost `{...}`. */
export function extractJson(text: string): Attempt<unknown> {
  const candidates: string[] = [];
  const trimmed = text.trim();
  candidates.push(trimmed);
  const fenced = fencePattern.exec(trimmed);
  if (fenced?.[1] !== undefined) candidates.push(fenced[1].trim());
  const start = trimmed.indexOf('{');
  const end = trimmed.lastIndexOf('}');
  if (start !== -1 && end > start) candidates.push(trimmed.slice(start, end + 1));

  let firstError = 'the reply is empty';
  for (const [index, candidate] of candidates.entries()) {
    if (candidate === '') continue;
    try {
      return { ok: true, value: JSON.parse(candidate) as unknown };
    } catch (error) {
      if (index === 0) firstError = error instanceof Error ? error.message : String(error);
    }
  }
  return { ok: false, problems: [`the reply is not valid JSON (${firstError})`] };
}
