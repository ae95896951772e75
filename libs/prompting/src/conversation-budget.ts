import { AppError, ErrorCode } from '@ratchet/errors';
import { countTokens, truncateStartToTokens, truncateToTokens } from '@ratchet/agent';

/** A tool call an assistant message asked for. */
export interface ConversationToolCall {
  readonly id?: string;
  readonly name: string;
  /** The arguments as sent, usually JSON. */
  readonly arguments: string;
}

/**
 * A chat message as any model adapter carries it; structural, so callers
 * pass their own message type and get it back.
 */
export interface ConversationMessage {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly content: string;
  /** For a tool message: the call it answers. */
  readonly toolCallId?: string;
  /** For a tool message: the tool's name. */
  readonly name?: string;
  readonly toolCalls?: readonly ConversationToolCall[];
}

/** How `fitConversation` shortens a conversation; every field is optional. */
export interface FitConversationOptions<M extends ConversationMessage = ConversationMessage> {
  /** The last this many messages are never changed. Default 2. */
  readonly keepLast?: number;
  /** Tokens added per message for the role and framing. Default 4. */
  readonly perMessageTokens?: number;
  /** User messages for which this is true carry tool output (observations) and may be elided like tool messages. Default: none. */
  readonly isObservation?: (message: M) => boolean;
  /** The setting named when the conversation cannot fit. Default `coder.promptBudgetTokens`. */
  readonly budgetKey?: string;
  /**
   * Only the last this many tool outputs are kept whole, even under the
   * budget; older ones are summarised, and string arguments of more than
   * `argumentTokens` in the tool calls before them are replaced by a note
   * (the edit is in the workspace already). Default: all, as the budget allows.
   */
  readonly keepObservations?: number;
  /** With `keepObservations`: the longest string argument of an old tool call kept whole, tokens. Default 200. */
  readonly argumentTokens?: number;
}

/** A conversation that fits its budget, and what was shortened to get there. */
export interface FittedConversation<M extends ConversationMessage> {
  /** The messages to send: the input ones, some with shortened content. */
  readonly messages: readonly M[];
  /** Their total as `conversationTokens` counts it; never more than the budget. */
  readonly tokens: number;
  /** How many tool outputs were replaced by a summary. */
  readonly elided: number;
  /** Whether the middle of the first user message (the task) was cut. */
  readonly taskTruncated: boolean;
}

const defaultKeepLast = 2;
const defaultPerMessageTokens = 4;
const defaultBudgetKey = 'coder.promptBudgetTokens';
const defaultArgumentTokens = 200;

/**
 * Tokens a conversation takes: each message's content, its tool calls' names
 * and arguments, plus `perMessageTokens` (default 4) per message and per tool
 * call for the framing.
 */
export function conversationTokens(messages: readonly ConversationMessage[], perMessageTokens = defaultPerMessageTokens): number {
  return messages.reduce((total, message) => total + messageTokens(message, perMessageTokens), 0);
}

/**
 * Makes a conversation fit `budgetTokens`. When it is over, tool outputs
 * (messages with role `tool`, and user messages `isObservation` accepts) are
 * replaced, oldest first, by a one-line summary
 * (`[output of run_tests elided: 120 lines, 3400 tokens; run it again if needed]`)
 * until it fits. System messages, the first user message (the task) and the
 * last `keepLast` messages (default 2) are never elided. If that is not
 * enough, the middle of the task is cut, keeping its start and end. The
 * messages are not mutated; changed ones are shallow copies.
 *
 * @throws AppError RESOURCE_EXHAUSTED (not retryable) naming the budget and
 *   the setting to raise (`budgetKey`, default `coder.promptBudgetTokens`)
 *   when the part that cannot be shortened is over the budget on its own.
 */
export function fitConversation<M extends ConversationMessage>(messages: readonly M[], budgetTokens: number, options: FitConversationOptions<M> = {}): FittedConversation<M> {
  const perMessage = options.perMessageTokens ?? defaultPerMessageTokens;
  const keepLast = Math.max(0, options.keepLast ?? defaultKeepLast);
  const isObservation = options.isObservation ?? (() => false);
  const budget = Math.floor(budgetTokens);
  const result = [...messages];
  const costs = result.map((message) => messageTokens(message, perMessage));
  let total = costs.reduce((sum, cost) => sum + cost, 0);
  const taskIndex = result.findIndex((message) => message.role === 'user');
  const firstKept = result.length - keepLast;
  const observation = (message: M, index: number) => index !== taskIndex && (message.role === 'tool' || (message.role === 'user' && isObservation(message)));
  const elidable = (message: M, index: number) => index < firstKept && observation(message, index);

  let elided = 0;
  /** Replaces message `index` by `shortened` when that is shorter; true when it did. */
  const replace = (index: number, shortened: M): boolean => {
    const cost = messageTokens(shortened, perMessage);
    // A short output stays as it is: its summary would be no shorter.
    if (cost >= (costs[index] ?? 0)) return false;
    total -= (costs[index] ?? 0) - cost;
    result[index] = shortened;
    costs[index] = cost;
    return true;
  };
  const summarise = (message: M, index: number): M => ({
    ...message,
    content: `[output of ${toolNameOf(result, index)} elided: ${lineCount(message.content)} lines, ${countTokens(message.content)} tokens; run it again if needed]`,
  });

  // Old turns go whatever the budget: every call would pay for them again, and the model acts on the recent ones.
  if (options.keepObservations !== undefined) {
    const observations = result.map((message, index) => (observation(message, index) ? index : -1)).filter((index) => index >= 0);
    const oldest = observations.length > options.keepObservations ? (observations[observations.length - options.keepObservations] ?? 0) : -1;
    for (let index = 0; index < oldest && index < firstKept; index += 1) {
      const message = result[index] as M;
      if (observation(message, index)) {
        if (replace(index, summarise(message, index))) elided += 1;
      } else if (message.role === 'assistant' && message.toolCalls !== undefined && message.toolCalls.length > 0 && index + 1 < oldest) {
        // A call whose output is summarised (its outputs follow it); the calls of the kept outputs stay whole.
        replace(index, { ...message, toolCalls: message.toolCalls.map((call) => shortenArguments(call, options.argumentTokens ?? defaultArgumentTokens)) });
      }
    }
  }
  if (total <= budget) return { messages: result, tokens: total, elided, taskTruncated: false };

  for (let index = 0; index < result.length && total > budget; index += 1) {
    const message = result[index] as M;
    if (!elidable(message, index)) continue;
    if (replace(index, summarise(message, index))) elided += 1;
  }

  let taskTruncated = false;
  // The task is cut even when it is among the last messages: it is the one part that is always there.
  const task = taskIndex >= 0 ? result[taskIndex] : undefined;
  if (total > budget && task !== undefined) {
    const taskCost = costs[taskIndex] ?? 0;
    const contentBudget = countTokens(task.content) - (total - budget);
    const content = truncateMiddle(task.content, contentBudget);
    if (content !== undefined) {
      const shortened = { ...task, content };
      const cost = messageTokens(shortened, perMessage);
      total -= taskCost - cost;
      result[taskIndex] = shortened;
      costs[taskIndex] = cost;
      taskTruncated = true;
    }
  }

  if (total > budget) {
    const key = options.budgetKey ?? defaultBudgetKey;
    throw new AppError(
      ErrorCode.RESOURCE_EXHAUSTED,
      `the prompt needs ${total} tokens after eliding old tool output and cutting the task, over the budget of ${budget}; raise ${key} or keep fewer messages verbatim (keepLast ${keepLast})`,
      { retryable: false },
    );
  }
  return { messages: result, tokens: total, elided, taskTruncated };
}

/**
 * A tool call with each string argument of more than `maxTokens` replaced by
 * a note (`[write_file's content elided: 230 lines, 3400 tokens; it is in the
 * workspace]`); arguments that are not a JSON object stay as they are, so
 * the call is still valid JSON for the provider.
 */
function shortenArguments(call: ConversationToolCall, maxTokens: number): ConversationToolCall {
  if (countTokens(call.arguments) <= maxTokens) return call;
  let parsed: unknown;
  try {
    parsed = JSON.parse(call.arguments);
  } catch {
    return call;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return call;
  let changed = false;
  const shortened = Object.fromEntries(
    Object.entries(parsed as Record<string, unknown>).map(([key, value]) => {
      if (typeof value !== 'string' || countTokens(value) <= maxTokens) return [key, value];
      changed = true;
      return [key, `[${call.name}'s ${key} elided: ${lineCount(value)} lines, ${countTokens(value)} tokens; what it did is in the workspace]`];
    }),
  );
  return changed ? { ...call, arguments: JSON.stringify(shortened) } : call;
}

function messageTokens(message: ConversationMessage, perMessage: number): number {
  let tokens = perMessage + countTokens(message.content);
  for (const call of message.toolCalls ?? []) tokens += perMessage + countTokens(call.name) + countTokens(call.arguments);
  return tokens;
}

/** The tool a tool message answers: its own name, else the name of the call it answers, else `a tool`. */
function toolNameOf(messages: readonly ConversationMessage[], index: number): string {
  const message = messages[index];
  if (message?.name !== undefined && message.name !== '') return message.name;
  if (message?.toolCallId !== undefined) {
    for (let earlier = index - 1; earlier >= 0; earlier -= 1) {
      const call = messages[earlier]?.toolCalls?.find((candidate) => candidate.id === message.toolCallId);
      if (call !== undefined) return call.name;
    }
  }
  return 'a tool';
}

function lineCount(text: string): number {
  if (text === '') return 0;
  let lines = 1;
  for (let index = text.indexOf('\n'); index >= 0; index = text.indexOf('\n', index + 1)) lines += 1;
  return text.endsWith('\n') ? lines - 1 : lines;
}

/**
 * `text` cut to at most `maxTokens` by removing its middle, with a marker
 * saying how much went; undefined when not even the marker fits. The start
 * gets the larger half: a task states its point first.
 */
function truncateMiddle(text: string, maxTokens: number): string | undefined {
  const total = countTokens(text);
  if (total <= maxTokens) return text;
  const marker = (removed: number) => `\n[… ${removed} tokens of the task cut here to fit the prompt budget …]\n`;
  let markerTokens = countTokens(marker(total));
  // Joining can merge tokens across the seams; shrink until the whole fits.
  for (let slack = 0; slack < 64; slack += 4) {
    const room = maxTokens - markerTokens - slack;
    if (room < 0) return undefined;
    const headTokens = Math.ceil(room * 0.6);
    const head = truncateToTokens(text, headTokens);
    const tail = truncateStartToTokens(text.slice(head.length), room - headTokens);
    const removed = Math.max(0, total - countTokens(head) - countTokens(tail));
    const candidate = `${head}${marker(removed)}${tail}`;
    if (countTokens(candidate) <= maxTokens) return candidate;
    markerTokens = countTokens(marker(removed));
  }
  return undefined;
}
