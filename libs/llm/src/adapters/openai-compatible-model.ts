import { AppError, ErrorCode } from '@ratchet/errors';
import type OpenAI from 'openai';
import type {
  ChatCompletion,
  ChatCompletionCreateParamsNonStreaming,
  ChatCompletionMessage,
  ChatCompletionMessageParam,
  ChatCompletionMessageToolCall,
} from 'openai/resources/chat/completions';
import type { ChatCallOptions, ChatMessage, ChatModel, ChatRequest, ChatResponse, ToolCall } from '../domain/chat-model';
import type { ModelPrice } from '../domain/cost';
import { withJsonInstruction } from '../domain/json-instruction';
import { countRetryAttempt, meteredCompletion } from './model-metrics';

let sdk: { default: typeof OpenAI } | undefined;

/**
 * The OpenAI SDK, loaded when the first adapter is made: it takes a fifth of
 * a second to load, which every `ratchet` command (most of which never call
 * a model) and every service would otherwise pay at start.
 */
function openAiSdk(): { default: typeof OpenAI } {
  sdk ??= require('openai') as { default: typeof OpenAI };
  return sdk;
}

export interface OpenAiCompatibleModelConfig {
  /**
   * Base URL of an OpenAI-compatible API, up to and including `/v1`
   * (OpenAI `https://api.openai.com/v1`, Ollama `http://localhost:11434/v1`,
   * vLLM and llama.cpp `http://host:port/v1`, Azure
   * `https://<resource>.openai.azure.com/openai/v1` or `.../openai/deployments/<name>`).
   */
  readonly baseUrl: string;
  /** Omit for local servers that take no key. */
  readonly apiKey?: string;
  /** Model (or Azure deployment) name sent as `model`. */
  readonly model: string;
  /** Per-attempt timeout in ms. Default 60000. */
  readonly timeoutMs?: number;
  /** Retries after the first attempt, for 408/409/429/5xx and connection errors. Default 3. */
  readonly maxRetries?: number;
  /** Whether the server enforces `response_format: json_schema`. Default true; when false the schema goes into the system prompt. */
  readonly supportsJsonSchema?: boolean;
  /** How the key is sent: `bearer` (Authorization header, default) or `api-key` (Azure). */
  readonly apiKeyHeader?: 'bearer' | 'api-key';
  /** Sent as the `api-version` query parameter (Azure). */
  readonly apiVersion?: string;
  /** Prices the tokens in the `ratchet_model_cost_usd_total` metric; without it the cost counts as 0. */
  readonly price?: ModelPrice;
}

/**
 * `fetch` whose rejections are `Error`s of this realm, and which counts the
 * SDK's retries in the model metrics. The SDK tells timeouts from other
 * connection failures with `instanceof Error` and the error name; where
 * fetch lives in another realm (jest's vm sandbox) its AbortError would
 * otherwise be flattened to a generic "Connection error".
 */
const sameRealmFetch: typeof fetch = async (input, init) => {
  // Each retry of the SDK is one more fetch: counted here, where the attempt number is visible.
  countRetryAttempt(init?.headers);
  try {
    return await fetch(input, init);
  } catch (error) {
    if (error instanceof Error || typeof error !== 'object' || error === null) throw error;
    const foreign = error as { name?: unknown; message?: unknown; cause?: unknown };
    const local = new Error(typeof foreign.message === 'string' ? foreign.message : 'fetch failed', { cause: foreign.cause });
    if (typeof foreign.name === 'string') local.name = foreign.name;
    throw local;
  }
};

const apiKeyAdvice = 'set RATCHET_MODEL_API_KEY or model.apiKey in config/models.yaml';

/**
 * ChatModel over `/chat/completions` of any OpenAI-compatible server, using
 * the official SDK and its retries (which honour `retry-after`).
 */
export class OpenAiCompatibleModel implements ChatModel {
  private readonly client: OpenAI;
  private readonly supportsJsonSchema: boolean;
  private readonly config: OpenAiCompatibleModelConfig;

  constructor(config: OpenAiCompatibleModelConfig) {
    this.config = config;
    this.supportsJsonSchema = config.supportsJsonSchema ?? true;
    const useApiKeyHeader = config.apiKeyHeader === 'api-key';
    const { default: Sdk } = openAiSdk();
    this.client = new Sdk({
      baseURL: config.baseUrl.replace(/\/+$/, ''),
      // The SDK insists on a key; local servers ignore the placeholder.
      apiKey: config.apiKey ?? 'no-key',
      timeout: config.timeoutMs ?? 60_000,
      maxRetries: config.maxRetries ?? 3,
      defaultHeaders: useApiKeyHeader ? { 'api-key': config.apiKey ?? null, Authorization: null } : undefined,
      defaultQuery: config.apiVersion === undefined ? undefined : { 'api-version': config.apiVersion },
      // Never pick up OPENAI_* settings from the environment by accident.
      organization: null,
      project: null,
      logLevel: 'off',
      fetch: sameRealmFetch,
    });
  }

  /**
   * Sends one chat completion request (retrying transient failures).
   *
   * @throws AppError UNAUTHENTICATED (401/403), RESOURCE_EXHAUSTED (429 after
   *   retries, retryable), UNAVAILABLE (5xx, connection, malformed reply;
   *   retryable), DEADLINE_EXCEEDED (timeout), INVALID_ARGUMENT (400/422),
   *   NOT_FOUND (404), CANCELLED (aborted by `options.signal`).
   */
  complete(request: ChatRequest, options: ChatCallOptions = {}): Promise<ChatResponse> {
    return meteredCompletion({ role: request.role, model: this.config.model }, this.config.price, () => this.completeOnce(request, options));
  }

  private async completeOnce(request: ChatRequest, options: ChatCallOptions): Promise<ChatResponse> {
    let completion: ChatCompletion;
    try {
      completion = await this.client.chat.completions.create(this.toParams(request), { signal: options.signal });
    } catch (error) {
      throw this.toAppError(error, request);
    }
    const choice = completion.choices?.[0];
    if (choice === undefined) {
      throw new AppError(ErrorCode.UNAVAILABLE, `model server at ${this.config.baseUrl} returned a completion without choices (${request.role} call)`);
    }
    const toolCalls = toolCallsOf(choice.message);
    const reported: string = choice.finish_reason ?? 'unknown';
    return {
      content: choice.message?.content ?? '',
      usage: { promptTokens: completion.usage?.prompt_tokens ?? 0, completionTokens: completion.usage?.completion_tokens ?? 0 },
      model: completion.model || this.config.model,
      // Some servers (older Ollama, some llama.cpp builds) say `stop` next to
      // tool calls; `length` is kept, as it means the arguments may be cut.
      finishReason: toolCalls.length > 0 && reported !== 'length' ? 'tool_calls' : reported,
      toolCalls,
    };
  }

  private toParams(request: ChatRequest): ChatCompletionCreateParamsNonStreaming {
    const format = request.responseFormat;
    const messages = format !== undefined && !this.supportsJsonSchema ? withJsonInstruction(request.messages, format) : request.messages;
    const params: ChatCompletionCreateParamsNonStreaming = {
      model: this.config.model,
      messages: messages.map(toWireMessage),
    };
    if (request.maxTokens !== undefined) params.max_tokens = request.maxTokens;
    if (request.temperature !== undefined) params.temperature = request.temperature;
    // OpenAI rejects an empty `tools` array, and `tool_choice` without tools.
    if (request.tools !== undefined && request.tools.length > 0) {
      params.tools = request.tools.map((tool) => ({ type: 'function', function: { name: tool.name, description: tool.description, parameters: { ...tool.parameters } } }));
      if (request.toolChoice !== undefined) params.tool_choice = request.toolChoice;
    }
    if (format !== undefined && this.supportsJsonSchema) {
      params.response_format = { type: 'json_schema', json_schema: { name: format.name, schema: { ...format.schema }, strict: true } };
    }
    return params;
  }

  /** `text` with the configured API key replaced wherever it appears. */
  private withoutKey(text: string): string {
    const key = this.config.apiKey;
    return key === undefined || key.length < 4 ? text : text.split(key).join('[REDACTED:api-key]');
  }

  private toAppError(error: unknown, request: ChatRequest): AppError {
    if (AppError.is(error)) return error;
    const { default: OpenAI } = openAiSdk();
    const where = `model ${this.config.model} at ${this.config.baseUrl} (${request.role} call)`;
    if (error instanceof OpenAI.APIUserAbortError) return new AppError(ErrorCode.CANCELLED, `${where} was cancelled`, { cause: error });
    if (error instanceof OpenAI.APIConnectionTimeoutError) {
      return new AppError(ErrorCode.DEADLINE_EXCEEDED, `${where} timed out after ${this.config.timeoutMs ?? 60_000} ms; raise timeoutMs or use a faster model`, { cause: error });
    }
    if (error instanceof OpenAI.APIConnectionError) {
      return new AppError(ErrorCode.UNAVAILABLE, `cannot reach ${where}: ${this.withoutKey(error.message)}; check baseUrl and that the server runs`, { cause: error });
    }
    if (error instanceof OpenAI.APIError && typeof error.status === 'number') {
      const status = error.status;
      // Providers may echo the key they refused: a 401/403 body is never repeated, other bodies lose the key.
      if (status === 401 || status === 403) {
        const what = this.config.apiKey === undefined ? 'no API key was sent' : status === 401 ? 'the API key was rejected' : 'the API key may not use this model';
        return new AppError(ErrorCode.UNAUTHENTICATED, `${where} answered HTTP ${status}: ${what}; ${apiKeyAdvice}`);
      }
      const detail = `${where} answered HTTP ${status}: ${this.withoutKey(error.message)}`;
      if (status === 429) return new AppError(ErrorCode.RESOURCE_EXHAUSTED, `${detail} (rate limited after retries); wait or lower concurrency`, { cause: error, retryable: true });
      if (status === 408) return new AppError(ErrorCode.DEADLINE_EXCEEDED, detail, { cause: error });
      if (status === 400 || status === 422) return new AppError(ErrorCode.INVALID_ARGUMENT, detail, { cause: error });
      if (status === 404) return new AppError(ErrorCode.NOT_FOUND, `${detail}; check the model name and baseUrl`, { cause: error });
      if (status >= 500) return new AppError(ErrorCode.UNAVAILABLE, detail, { cause: error, retryable: true });
      return new AppError(ErrorCode.INTERNAL, detail, { cause: error });
    }
    // A 2xx whose body is not a completion (truncated JSON, an HTML proxy page...).
    const message = this.withoutKey(error instanceof Error ? error.message : String(error));
    return new AppError(ErrorCode.UNAVAILABLE, `${where} returned a malformed response: ${message}`, { cause: error, retryable: true });
  }
}

function toWireMessage(message: ChatMessage): ChatCompletionMessageParam {
  if (message.role === 'tool') return { role: 'tool', tool_call_id: message.toolCallId, content: message.content };
  if ('toolCalls' in message && message.toolCalls.length > 0) {
    return {
      role: 'assistant',
      // null, not '': the documented form for a reply that only calls tools; some servers reject an empty string here.
      content: message.content === '' ? null : message.content,
      tool_calls: message.toolCalls.map((call) => ({ id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } })),
    };
  }
  return { role: message.role, content: message.content };
}

function toolCallsOf(message: ChatCompletionMessage | undefined): ToolCall[] {
  // Local servers sometimes leave out ids or arguments; the fallbacks keep a
  // call answerable instead of dropping it.
  const calls: readonly ChatCompletionMessageToolCall[] = message?.tool_calls ?? [];
  return calls.map((call, index) => {
    const id = call.id || `call_${index + 1}`;
    if (call.type === 'custom') return { id, name: call.custom.name, arguments: call.custom.input };
    return { id, name: call.function?.name ?? '', arguments: call.function?.arguments ?? '{}' };
  });
}
