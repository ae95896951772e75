import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { AppError, ErrorCode } from '@ratchet/errors';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { ChatRole, type ChatCallOptions, type ChatModel, type ChatRequest, type ChatResponse, type ToolCall } from '../domain/chat-model';
import { meteredCompletion } from './model-metrics';

const toolCallSchema = z.strictObject({
  name: z.string().min(1),
  /** An object (sent as its JSON text) or the exact text to send, e.g. malformed JSON to test the caller's error path. Default `{}`. */
  arguments: z.union([z.record(z.string(), z.unknown()), z.string()]).optional(),
  /** Default `scripted-<turn>-<n>`. */
  id: z.string().min(1).optional(),
});

const turnSchema = z.strictObject({
  role: z.enum([ChatRole.PLANNER, ChatRole.CODER, ChatRole.TESTER, ChatRole.REFLECTOR, ChatRole.REPROMPTER, ChatRole.REVIEWER, ChatRole.AUDITOR]),
  /** Substrings the last user message, or a tool result since the last assistant message, must contain. */
  expect: z.union([z.string(), z.array(z.string())]).optional(),
  /** The reply text; optional when `toolCalls` is given (a turn needs at least one). */
  reply: z.string().optional(),
  /** Tools the model calls in this turn; the request must offer them. */
  toolCalls: z.array(toolCallSchema).min(1).optional(),
  /**
   * by-expect only: how many matching requests this turn may answer. More
   * than 1 lets a script survive a phase being asked again, e.g. after the
   * orchestrator crashed mid-call and re-ran the phase. Default 1.
   */
  times: z.number().int().min(1).max(100).optional(),
  usage: z.strictObject({ promptTokens: z.number().int().nonnegative(), completionTokens: z.number().int().nonnegative() }).optional(),
  /** Why the recorded reply ended: `length` replays a reply cut at the token limit. Default `tool_calls` with toolCalls, else `stop`. */
  finishReason: z.enum(['stop', 'length', 'tool_calls']).optional(),
});

const turnsSchema = z.array(turnSchema);

/** One recorded model turn: the reply (text, tool calls or both) to the next request made for `role`. */
export type ScriptedTurn = z.input<typeof turnSchema>;

/** One call a ScriptedModel answered. */
export interface ScriptedCall {
  /** 1-based turn number in the script. */
  readonly turn: number;
  readonly request: ChatRequest;
  readonly response: ChatResponse;
}

/**
 * How a request finds its turn: `strict` replays the script in order;
 * `by-expect` answers with the first unused turn for the request's role whose
 * `expect` substrings all appear, so concurrent tasks (each with its own
 * words to expect) can share one script.
 */
export const ScriptOrder = { STRICT: 'strict', BY_EXPECT: 'by-expect' } as const;
export type ScriptOrder = (typeof ScriptOrder)[keyof typeof ScriptOrder];

export interface ScriptedModelOptions {
  /** Shown as `scripted:<name>` in every response's `model`. Default `inline`. */
  readonly name?: string;
  /** Default: the script file's `order`, else `strict`. */
  readonly order?: ScriptOrder;
  /** Only these roles' turns are kept: a role service replays its own part of a shared script. Default: all. */
  readonly roles?: readonly ChatRole[];
}

/**
 * A ChatModel that replays a script of recorded turns, in order, and fails
 * loudly when the conversation departs from it. Every response's `model` is
 * `scripted:<name>`, so output can say the model was scripted.
 */
export class ScriptedModel implements ChatModel {
  /** Every call answered so far, in order. */
  readonly calls: ScriptedCall[] = [];
  readonly name: string;
  readonly order: ScriptOrder;
  private readonly turns: readonly ScriptedTurn[];
  /** How many requests each turn has answered. */
  private readonly uses: number[];
  private next = 0;

  constructor(turns: readonly ScriptedTurn[], options: ScriptedModelOptions = {}) {
    const roles = options.roles;
    this.turns = parseScript(turns, options.name ?? 'inline').filter((turn) => roles === undefined || roles.includes(turn.role));
    this.uses = this.turns.map(() => 0);
    this.name = options.name ?? 'inline';
    this.order = options.order ?? ScriptOrder.STRICT;
  }

  /**
   * Loads a script from a `.yaml`/`.yml` or `.json` file: either a list of
   * turns or `{ turns: [...] }`. The model is named after the file.
   *
   * @throws AppError NOT_FOUND when the file cannot be read; CONFIG_INVALID
   *   when it is not valid YAML/JSON or a turn is malformed (every problem is
   *   listed with its path).
   */
  static async fromFile(path: string, options: Omit<ScriptedModelOptions, 'name'> = {}): Promise<ScriptedModel> {
    const name = basename(path);
    let text: string;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      throw new AppError(ErrorCode.NOT_FOUND, `cannot read model script ${name}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
    }
    let data: unknown;
    try {
      data = /\.json$/i.test(path) ? JSON.parse(text) : parseYaml(text);
    } catch (error) {
      throw new AppError(ErrorCode.CONFIG_INVALID, `model script ${name} is not valid ${/\.json$/i.test(path) ? 'JSON' : 'YAML'}: ${error instanceof Error ? error.message : String(error)}`, {
        cause: error,
      });
    }
    const order = typeof data === 'object' && data !== null && 'order' in data ? (data as { order: unknown }).order : undefined;
    if (order !== undefined && order !== ScriptOrder.STRICT && order !== ScriptOrder.BY_EXPECT) {
      throw new AppError(ErrorCode.CONFIG_INVALID, `model script ${name}: order is ${JSON.stringify(order)}; use ${ScriptOrder.STRICT} or ${ScriptOrder.BY_EXPECT}`);
    }
    return new ScriptedModel(parseScript(data, name), { name, ...(order === undefined ? {} : { order: order as ScriptOrder }), ...options });
  }

  /** Turns not yet replayed. */
  get remaining(): number {
    return this.uses.filter((uses) => uses === 0).length;
  }

  /**
   * Answers with the next turn's reply and tool calls.
   *
   * @throws AppError FAILED_PRECONDITION when the script has run out, or the
   *   next turn is for another role, or neither the last user message nor the
   *   tool results since the last assistant message contain one of the turn's
   *   `expect` substrings, or the turn calls a tool the request did not
   *   offer; CANCELLED when `options.signal` is aborted.
   */
  complete(request: ChatRequest, options: ChatCallOptions = {}): Promise<ChatResponse> {
    // The turn is taken at once, in call order; the metrics count it like a real model's call.
    return meteredCompletion({ role: request.role, model: `scripted:${this.name}` }, undefined, () => {
      try {
        return Promise.resolve(this.answer(request, options));
      } catch (error) {
        return Promise.reject(error as Error);
      }
    });
  }

  /**
   * @throws AppError FAILED_PRECONDITION when turns of the script were never replayed.
   */
  assertFinished(): void {
    if (this.remaining > 0) {
      const first = this.uses.indexOf(0);
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `model script ${this.name}: ${this.remaining} turn(s) not replayed, starting with turn ${first + 1} (${this.turns[first]?.role ?? '?'})`);
    }
  }

  private answer(request: ChatRequest, options: ChatCallOptions): ChatResponse {
    if (options.signal?.aborted === true) throw new AppError(ErrorCode.CANCELLED, `scripted ${request.role} call was cancelled`, { cause: options.signal.reason });
    const seen = expectableText(request);
    if (this.order === ScriptOrder.BY_EXPECT) return this.answerByExpect(request, seen);
    const number = this.next + 1;
    const turn = this.turns[this.next];
    if (turn === undefined) {
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `model script ${this.name} ran out: turn ${number} was requested by the ${request.role} but the script has only ${this.turns.length} turn(s)`);
    }
    if (turn.role !== request.role) {
      throw new AppError(ErrorCode.FAILED_PRECONDITION, `model script ${this.name}, turn ${number}: expected a ${turn.role} request, got a ${request.role} request`);
    }
    for (const substring of expectedOf(turn)) {
      if (!seen.includes(substring)) {
        throw new AppError(
          ErrorCode.FAILED_PRECONDITION,
          `model script ${this.name}, turn ${number} (${turn.role}): expected the last user message or the latest tool results to contain ${JSON.stringify(substring)}, got ${JSON.stringify(preview(seen))}`,
        );
      }
    }
    const response = this.replay(number - 1, request);
    this.next += 1;
    return response;
  }

  private answerByExpect(request: ChatRequest, seen: string): ChatResponse {
    const index = this.turns.findIndex((turn, at) => this.available(at) && turn.role === request.role && expectedOf(turn).every((substring) => seen.includes(substring)));
    if (index < 0) {
      const left = this.turns.filter((turn, at) => this.available(at) && turn.role === request.role).length;
      throw new AppError(
        ErrorCode.FAILED_PRECONDITION,
        `model script ${this.name}: no unused ${request.role} turn expects this request (${left} ${request.role} turn(s) left); the last user message and latest tool results were ${JSON.stringify(preview(seen))}`,
      );
    }
    return this.replay(index, request);
  }

  private available(index: number): boolean {
    return (this.uses[index] ?? 0) < (this.turns[index]?.times ?? 1);
  }

  private replay(index: number, request: ChatRequest): ChatResponse {
    const turn = this.turns[index] as ScriptedTurn;
    const number = index + 1;
    const toolCalls = toolCallsOf(turn, number);
    this.checkToolsOffered(toolCalls, request, number);
    this.uses[index] = (this.uses[index] ?? 0) + 1;
    const response: ChatResponse = {
      content: turn.reply ?? '',
      usage: turn.usage ?? { promptTokens: 0, completionTokens: 0 },
      model: `scripted:${this.name}`,
      finishReason: turn.finishReason ?? (toolCalls.length > 0 ? 'tool_calls' : 'stop'),
      toolCalls,
    };
    this.calls.push({ turn: number, request, response });
    return response;
  }

  // A request that offered no tools getting tool calls means the script has
  // drifted from the code. A call of a tool that was not offered is allowed:
  // real models invent tool names, and the caller must cope with that.
  private checkToolsOffered(toolCalls: readonly ToolCall[], request: ChatRequest, number: number): void {
    if (toolCalls.length === 0 || (request.tools ?? []).length > 0) return;
    throw new AppError(ErrorCode.FAILED_PRECONDITION, `model script ${this.name}, turn ${number} (${request.role}) calls ${toolCalls[0]?.name ?? '?'}, but the request offered no tools`);
  }
}

function parseScript(data: unknown, name: string): ScriptedTurn[] {
  // `{ turns: [...] }` and a bare list are both accepted; validating the list
  // itself keeps issue paths short (`0.role`, not a union's "Invalid input").
  const turns = typeof data === 'object' && data !== null && !Array.isArray(data) && 'turns' in data ? (data as { turns: unknown }).turns : data;
  const result = turnsSchema.safeParse(turns);
  // Checked on the raw turns, beside the schema, so a turn with a misspelled
  // key (`replies:`) is reported as missing its reply too.
  const empty = Array.isArray(turns)
    ? turns.flatMap((turn, index) =>
        typeof turn === 'object' && turn !== null && !('reply' in turn) && !('toolCalls' in turn) ? [`${index}.reply: a turn needs a reply, toolCalls, or both`] : [],
      )
    : [];
  if (!result.success || empty.length > 0) {
    const problems = (result.success ? [] : result.error.issues).map((issue) => `${issue.path.length === 0 ? '(root)' : issue.path.map(String).join('.')}: ${issue.message}`);
    throw new AppError(
      ErrorCode.CONFIG_INVALID,
      `model script ${name} is invalid (expected a list of turns { role, expect?, reply?, toolCalls?: [{ name, arguments?, id? }], usage? }): ${[...problems, ...empty].join('; ')}`,
    );
  }
  return result.data;
}

function toolCallsOf(turn: ScriptedTurn, number: number): ToolCall[] {
  return (turn.toolCalls ?? []).map((call, index) => ({
    id: call.id ?? `scripted-${number}-${index + 1}`,
    name: call.name,
    arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments ?? {}),
  }));
}

/**
 * What a turn's `expect` is matched against: the last user message, and the
 * tool results since the last assistant message (the newest input under
 * native tool calling, where the user message stays the task statement).
 */
function expectableText(request: ChatRequest): string {
  const messages = request.messages;
  const lastUser = [...messages].reverse().find((message) => message.role === 'user')?.content ?? '';
  let lastAssistant = -1;
  messages.forEach((message, index) => {
    if (message.role === 'assistant') lastAssistant = index;
  });
  const results = messages.slice(lastAssistant + 1).flatMap((message) => (message.role === 'tool' ? [message.content] : []));
  return [lastUser, ...results].join('\n');
}

function expectedOf(turn: ScriptedTurn): string[] {
  return turn.expect === undefined ? [] : typeof turn.expect === 'string' ? [turn.expect] : [...turn.expect];
}

// Head and tail: the newest tool results sit at the end of a long text.
function preview(text: string): string {
  return text.length > 400 ? `${text.slice(0, 200)}...${text.slice(-200)}` : text;
}
