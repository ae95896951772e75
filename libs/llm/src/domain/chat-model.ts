/** Which agent role a request is made for; adapters may route or budget by it. */
export const ChatRole = {
  PLANNER: 'planner',
  CODER: 'coder',
  TESTER: 'tester',
  REFLECTOR: 'reflector',
  REPROMPTER: 'reprompter',
  REVIEWER: 'reviewer',
  AUDITOR: 'auditor',
} as const;

export type ChatRole = (typeof ChatRole)[keyof typeof ChatRole];

/** A plain message: instructions, a request, or a reply without tool calls. */
export interface TextMessage {
  readonly role: 'system' | 'user' | 'assistant';
  readonly content: string;
}

/** One tool call as the model made it. */
export interface ToolCall {
  /** The server's call id (`call_...`), or one the caller made up (`text-1`, `scripted-3-1`); a tool message answers it by this id. */
  readonly id: string;
  readonly name: string;
  /**
   * The arguments as JSON text, exactly as the model sent them. Not parsed
   * here, so a malformed call still reaches the caller, who can tell the
   * model what was wrong.
   */
  readonly arguments: string;
}

/** An assistant reply that called tools; `content` is the text sent alongside (often empty). */
export interface AssistantToolCallMessage {
  readonly role: 'assistant';
  readonly content: string;
  readonly toolCalls: readonly ToolCall[];
}

/** The result of one tool call, sent back to the model. */
export interface ToolResultMessage {
  readonly role: 'tool';
  /** The `ToolCall.id` this answers. */
  readonly toolCallId: string;
  /** The tool's name; the OpenAI wire format does not carry it, but logs and the scripted model read it. */
  readonly name: string;
  readonly content: string;
}

/**
 * One message of a conversation. Every variant has `content`, so code that
 * only reads text needs no narrowing; `'toolCalls' in message` or
 * `message.role === 'tool'` tells the tool-calling variants apart.
 */
export type ChatMessage = TextMessage | AssistantToolCallMessage | ToolResultMessage;

/** A tool the model may call. */
export interface ToolDefinition {
  /** `[a-zA-Z0-9_-]`, at most 64 characters, as OpenAI requires. */
  readonly name: string;
  readonly description: string;
  /** JSON Schema of the arguments object (`{ type: 'object', properties, required }`). */
  readonly parameters: Readonly<Record<string, unknown>>;
}

/** Whether the model may (`auto`), must (`required`) or must not (`none`) call a tool. */
export type ToolChoice = 'auto' | 'required' | 'none';

/**
 * How a role's model is asked to call tools: `native` uses the API's
 * `tools`/`tool_calls`; `text` puts the tools into the system prompt and reads
 * one fenced block per reply (see `describeToolsAsText`), for servers
 * without tool-calling support.
 */
export const ToolProtocol = { NATIVE: 'native', TEXT: 'text' } as const;
export type ToolProtocol = (typeof ToolProtocol)[keyof typeof ToolProtocol];

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
  /** Tools the model may call; none when absent or empty. */
  readonly tools?: readonly ToolDefinition[];
  /** Only sent with `tools`; the server's default (`auto`) when absent. */
  readonly toolChoice?: ToolChoice;
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
  /**
   * `stop`, `length`, `tool_calls`, ... as the server reports it; `unknown`
   * when absent. `tool_calls` whenever `toolCalls` is not empty, unless the
   * server said `length` (the last call's arguments may then be cut short).
   */
  readonly finishReason: string;
  /** The tools the model called, in order; empty when it called none. */
  readonly toolCalls: readonly ToolCall[];
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
