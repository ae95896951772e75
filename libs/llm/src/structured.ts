import { AppError, ErrorCode } from '@ratchet/errors';
import { z } from 'zod';
import type { ChatCallOptions, ChatMessage, ChatModel, ChatRequest, ChatResponse, TokenUsage, ToolCall, ToolDefinition } from './domain/chat-model';
import { addUsage } from './domain/cost';

export interface StructuredOptions extends ChatCallOptions {
  /** Replies longer than this many bytes (UTF-8) are rejected before parsing. Default 1 MB (1_000_000). */
  readonly maxReplyBytes?: number;
  /** `responseFormat.name` when the request has none. Default `response`. */
  readonly schemaName?: string;
  /** Tools the model may call to look things up before it replies (native tool calling only). */
  readonly lookups?: StructuredLookups;
}

/**
 * Read-only tools offered alongside the response format: a reply that calls
 * them gets their results and is asked again, at most `maxRounds` times;
 * the call after the last round offers them no more (tool choice `none`)
 * and asks for the reply.
 */
export interface StructuredLookups {
  readonly tools: readonly ToolDefinition[];
  /** Model calls that may call tools; 0 offers none. */
  readonly maxRounds: number;
  /** What the model is told for one call, its own mistakes included; calls run in order. */
  run(call: ToolCall): Promise<string>;
}

export interface StructuredResult<T> {
  readonly value: T;
  /** Summed over all rounds. */
  readonly usage: TokenUsage;
  /** Model calls made: the lookup rounds, the reply and a repair round when one was needed. */
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
    /** Model calls made, lookup rounds included. */
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

  const { response: first, messages, usage: firstUsage, rounds: firstRounds } = await replyAfterLookups(model, firstRequest, options.lookups, callOptions);
  const firstAttempt = parseReply(first, schema, maxReplyBytes, firstRounds, firstRounds > 1 ? subtractUsage(firstUsage, first.usage) : undefined);
  if (firstAttempt.ok) return { value: firstAttempt.value, usage: firstUsage, rounds: firstRounds };

  // A reply cut at the token limit is not a schema mistake: the model is asked for a shorter one.
  const repair = firstAttempt.truncated
    ? `Your reply was cut off at the length limit (${request.maxTokens ?? 'the'} tokens) before the JSON was complete. ` +
      'Reply again with a complete JSON object that fits: shorter text, and fewer or smaller files (leave out files that do not need to change).'
    : 'Your reply did not match the required JSON schema:\n' + firstAttempt.problems.map((problem) => `- ${problem}`).join('\n') + '\nReply again with only the corrected JSON object.';
  const repairMessages: ChatMessage[] = [...messages, { role: 'assistant', content: first.content }, { role: 'user', content: repair }];
  const second = await model.complete({ ...firstRequest, ...noMoreTools(options.lookups), messages: repairMessages }, callOptions).catch((error: unknown) => {
    throw new StructuredReplyError(AppError.from(error).message, firstUsage, firstRounds, firstAttempt.truncated === true);
  });
  const usage = addUsage(firstUsage, second.usage);
  const rounds = firstRounds + 1;
  const secondAttempt = parseReply(second, schema, maxReplyBytes, rounds, firstUsage);
  if (secondAttempt.ok) return { value: secondAttempt.value, usage, rounds };

  throw new StructuredReplyError(
    secondAttempt.truncated === true
      ? `the ${request.role} model's reply was cut off at the length limit (${request.maxTokens ?? '?'} tokens) twice; give the role a larger maxTokens in config/models.yaml, or a smaller task`
      : `the ${request.role} model's reply did not match the schema "${firstRequest.responseFormat?.name ?? schemaName}" after one repair round: ${secondAttempt.problems.join('; ')}`,
    usage,
    rounds,
    secondAttempt.truncated === true,
  );
}

const lastLookup = 'That was the last lookup: reply now with the JSON object.';

/**
 * The first usable-looking reply: one call, or, with `lookups`, the calls
 * until the model stops calling tools or the rounds are used up. Returns it
 * with the conversation that led to it and what every call used.
 *
 * @throws StructuredReplyError when a call after the first fails (so the
 *   tokens already spent are counted); whatever the first call throws.
 */
async function replyAfterLookups(
  model: ChatModel,
  request: ChatRequest,
  lookups: StructuredLookups | undefined,
  callOptions: ChatCallOptions,
): Promise<{ response: ChatResponse; messages: ChatMessage[]; usage: TokenUsage; rounds: number }> {
  const messages: ChatMessage[] = [...request.messages];
  const maxRounds = lookups === undefined || lookups.tools.length === 0 ? 0 : lookups.maxRounds;
  let usage: TokenUsage = { promptTokens: 0, completionTokens: 0 };
  for (let round = 0; ; round += 1) {
    const offer = round < maxRounds ? { tools: lookups?.tools ?? [], toolChoice: 'auto' as const } : noMoreTools(maxRounds > 0 ? lookups : undefined);
    const call = model.complete({ ...request, ...offer, messages: [...messages] }, callOptions);
    const response = round === 0 ? await call : await call.catch((error: unknown) => {
      throw new StructuredReplyError(AppError.from(error).message, usage, round, false);
    });
    usage = addUsage(usage, response.usage);
    if (round >= maxRounds || response.toolCalls.length === 0 || lookups === undefined) return { response, messages, usage, rounds: round + 1 };
    messages.push({ role: 'assistant', content: response.content, toolCalls: response.toolCalls });
    for (const toolCall of response.toolCalls) messages.push({ role: 'tool', toolCallId: toolCall.id, name: toolCall.name, content: await lookups.run(toolCall) });
    if (round + 1 === maxRounds) messages.push({ role: 'user', content: lastLookup });
  }
}

/** The tools of a conversation that used them, no longer callable: a history with tool calls needs its tools declared. */
function noMoreTools(lookups: StructuredLookups | undefined): Pick<ChatRequest, 'tools' | 'toolChoice'> {
  return lookups === undefined || lookups.tools.length === 0 ? {} : { tools: lookups.tools, toolChoice: 'none' };
}

function subtractUsage(total: TokenUsage, part: TokenUsage): TokenUsage {
  return { promptTokens: total.promptTokens - part.promptTokens, completionTokens: total.completionTokens - part.completionTokens };
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
