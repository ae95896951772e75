/** Which agent role a request is made for; adapters may route or budget by it. */
export const ChatRole = {
  PLANNER: 'planner',
  CODER: 'coder',
  TESTER: 'tester',
  REFLECTOR: 'reflector',
} as const;

export type ChatRole = (typeof ChatRole)[keyof typeof ChatRole];

export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: string;
}

/** Asks the model for a reply in JSON that matches `schema` (a JSON Schema object). */
export interface ResponseFormat {
  /** A short identifier, `[a-zA-Z0-9_-]`, as OpenAI's `json_schema.name` requires. */
  readonly name: string;
  readonly schema: Readonly<Record<string, unknown>>;
}

export interface ChatRequest {
  readonly role: ChatRole;
  readonly messages: readonly ChatMessage[];
  /** Upper bound on completion tokens; the server's default when absent. */
  readonly maxTokens?: number;
  readonly temperature?: number;
  readonly responseFormat?: ResponseFormat;
}

export interface TokenUsage {
  readonly promptTokens: number;
  readonly completionTokens: number;
}

export interface ChatResponse {
  readonly content: string;
  readonly usage: TokenUsage;
  /** The model that answered, as the server reports it (`scripted:<file>` for ScriptedModel). */
  readonly model: string;
  /** `stop`, `length`, `tool_calls`, ... as the server reports it; `unknown` when absent. */
  readonly finishReason: string;
}

export interface ChatCallOptions {
  readonly signal?: AbortSignal;
}

/**
 * The port every model call goes through. Implementations throw AppError
 * only; callers branch on `code` / `isRetryable`.
 */
export interface ChatModel {
  complete(request: ChatRequest, options?: ChatCallOptions): Promise<ChatResponse>;
}
