import { capText, durationFromMs, firstStopRule, type StopRule } from '@ratchet/agent';
import { sumUsage } from '@ratchet/prompting';
import type { ToolStep, Usage } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';
import { formatToolResultAsText, parseTextToolCall, ToolProtocol, type ChatMessage, type ChatResponse, type ToolDefinition } from '@ratchet/llm';
import { parseToolCall, ToolName, toolDefinitions, type ValidCall } from './agent-tools';

/** What running one tool gave. */
export interface ToolOutcome {
  /** What goes back to the model. */
  readonly result: string;
  readonly failed: boolean;
  /** For run: the command policy's decision (allow, deny, ask). */
  readonly decision?: string;
  /** The command needs a person's decision: the loop stops here, for the phase to go on once it is made. */
  readonly pause?: PausedCommand;
}

/** A command the loop stopped at, for a person to decide. */
export interface PausedCommand {
  readonly commandLine: string;
  readonly reason: string;
}

/** Everything the loop does outside itself: the model, the tools, the record, the clock. */
export interface AgentPorts {
  /** One model call; the conversation already fits the prompt budget. Returns the reply and what it cost. */
  complete(messages: readonly ChatMessage[], tools: readonly ToolDefinition[] | undefined): Promise<{ readonly response: ChatResponse; readonly usage: Usage }>;
  /** Runs a validated call (never finish). Tool failures are outcomes; only infrastructure failures throw. */
  execute(call: ValidCall): Promise<ToolOutcome>;
  /** Keeps a step (stored and shown) before the loop goes on. */
  record(step: ToolStep): Promise<void>;
  /** The conversation cut to the prompt budget (oldest tool outputs summarised first). */
  fit(messages: readonly ChatMessage[]): readonly ChatMessage[];
  /** Epoch ms. */
  now(): number;
}

/** Bounds of one coding phase; 0 means none for the token and call limits. */
export interface AgentLimits {
  /** Tool calls in the phase. */
  readonly maxSteps: number;
  /** Model calls the task may still make. */
  readonly maxModelCalls: number;
  /** Tokens (prompt + completion) the task may still spend. */
  readonly maxTokens: number;
  /** Wall time of the phase, ms. */
  readonly wallTimeMs: number;
}

export interface AgentRun {
  /** The model's finish summary, or why the loop stopped without one. */
  readonly summary: string;
  /** Whether the model called finish. */
  readonly finished: boolean;
  readonly steps: readonly ToolStep[];
  readonly usage: Usage;
  /** Set when the loop stopped at a command a person must decide on. */
  readonly paused?: PausedCommand;
}

/** Caps on what a step keeps of the call and its result, characters. */
const stepArgumentChars = 2_000;
const stepResultChars = 4_000;
const stepThoughtChars = 1_000;

const noToolCall = 'Your reply called no tool. Work through the tools; call finish with a summary when the change is complete.';

/**
 * The agentic coder's loop: ask the model, run the tools it calls, give
 * back their results, until it calls finish or a bound is reached. The
 * bounds are checked before every model call, every call counts (rejected
 * ones included), and every tool call is recorded as a step before the
 * next model call. `protocol` picks the OpenAI tool-calling API (`native`)
 * or one fenced block per reply (`text`, the tools then being described in
 * `initial`'s system message by the caller).
 *
 * @throws AppError CANCELLED when `signal` aborts; what the ports throw.
 */
export async function runAgent(initial: readonly ChatMessage[], protocol: ToolProtocol, ports: AgentPorts, limits: AgentLimits, signal?: AbortSignal): Promise<AgentRun> {
  const messages: ChatMessage[] = [...initial];
  const steps: ToolStep[] = [];
  let usage: Usage = { promptTokens: 0, completionTokens: 0, costUsd: 0, modelCalls: 0 };
  const started = ports.now();
  const record = async (step: Omit<ToolStep, 'number'>) => {
    const numbered: ToolStep = { ...step, number: steps.length + 1 };
    steps.push(numbered);
    await ports.record(numbered);
  };

  for (;;) {
    if (signal?.aborted === true) throw new AppError(ErrorCode.CANCELLED, 'the coding phase was cancelled');
    const stop = stopReason(steps.length, usage, ports.now() - started, limits);
    if (stop !== undefined) return { summary: `stopped without finish: ${stop}`, finished: false, steps, usage };
    // A copy: the conversation grows after the call, and what was sent must stay as it was.
    const { response, usage: callUsage } = await ports.complete([...ports.fit(messages)], protocol === ToolProtocol.NATIVE ? toolDefinitions : undefined);
    usage = sumUsage(usage, callUsage);

    const calls = protocol === ToolProtocol.NATIVE ? nativeCalls(response) : textCall(response, steps.length + 1);
    if (protocol === ToolProtocol.NATIVE && response.toolCalls.length > 0) messages.push({ role: 'assistant', content: response.content, toolCalls: response.toolCalls });
    else messages.push({ role: 'assistant', content: response.content });

    if ('error' in calls) {
      // Not a tool call the loop can run: the model is told why, and the attempt is a step of its own.
      const reason = response.finishReason === 'length' ? 'your reply was cut at the token limit before a complete tool call; send a shorter reply with one tool call' : calls.error;
      messages.push({ role: 'user', content: reason });
      await record({ tool: '(none)', arguments: '', result: reason, failed: true, decision: '', duration: durationFromMs(0), thought: capText(response.content, stepThoughtChars) });
      continue;
    }

    for (const call of calls.calls) {
      const callStarted = ports.now();
      const parsed = parseToolCall(call.name, call.arguments);
      let outcome: ToolOutcome;
      let finished: string | undefined;
      if (!parsed.ok) outcome = { result: parsed.error, failed: true };
      else if (parsed.call.tool === ToolName.FINISH) {
        finished = parsed.call.args.summary;
        outcome = { result: 'finished', failed: false };
      } else outcome = await ports.execute(parsed.call);
      const result = outcome.result;
      if (protocol === ToolProtocol.NATIVE) messages.push({ role: 'tool', toolCallId: call.id, name: call.name, content: result });
      else messages.push({ role: 'user', content: formatToolResultAsText(call.name, result) });
      await record({
        tool: call.name.slice(0, 64),
        arguments: capText(call.arguments, stepArgumentChars),
        result: capText(result, stepResultChars),
        failed: outcome.failed,
        decision: outcome.decision ?? '',
        duration: durationFromMs(ports.now() - callStarted),
        thought: capText(call.thought, stepThoughtChars),
      });
      if (finished !== undefined) return { summary: finished, finished: true, steps, usage };
      if (outcome.pause !== undefined) return { summary: `stopped to ask a person: may it run "${outcome.pause.commandLine}"?`, finished: false, steps, usage, paused: outcome.pause };
    }
  }
}

/** What the coder's stop rules look at, before each model call. */
export interface AgentProgress {
  readonly stepCount: number;
  /** What the phase's model calls used so far. */
  readonly usage: Usage;
  readonly elapsedMs: number;
  readonly limits: AgentLimits;
}

/**
 * Every reason the coder's tool loop stops without finish, in the order they
 * are checked, on the same `StopRule` shape as the task loop's stop
 * conditions. The task's own budget stops are the orchestrator's; these
 * are what is left of them for this phase, and the phase's own bounds.
 */
export const agentStopRules: readonly StopRule<AgentProgress>[] = [
  {
    name: 'tool-steps',
    check: ({ stepCount, limits }) => (stepCount >= limits.maxSteps ? `the coding phase used its ${limits.maxSteps} tool steps (coder.maxSteps)` : undefined),
  },
  {
    name: 'model-calls',
    check: ({ usage, limits }) => (limits.maxModelCalls > 0 && usage.modelCalls >= limits.maxModelCalls ? `the task's model calls are used up (${usage.modelCalls} in this phase)` : undefined),
  },
  {
    name: 'token-budget',
    check: ({ usage, limits }) => {
      const tokens = usage.promptTokens + usage.completionTokens;
      return limits.maxTokens > 0 && tokens >= limits.maxTokens ? `the task's token budget is used up (${tokens} tokens in this phase)` : undefined;
    },
  },
  {
    name: 'wall-time',
    check: ({ elapsedMs, limits }) => (elapsedMs >= limits.wallTimeMs ? `the coding phase ran for its ${Math.round(limits.wallTimeMs / 1000)} s (coder.phaseTimeoutSeconds)` : undefined),
  },
];

/** Why the loop must stop before its next model call, or undefined. */
export function stopReason(stepCount: number, usage: Usage, elapsedMs: number, limits: AgentLimits): string | undefined {
  return firstStopRule(agentStopRules, { stepCount, usage, elapsedMs, limits })?.detail;
}

interface PendingCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
  readonly thought: string;
}

function nativeCalls(response: ChatResponse): { calls: PendingCall[] } | { error: string } {
  if (response.toolCalls.length === 0) return { error: noToolCall };
  // The reply's text is the thought of its first call only.
  return { calls: response.toolCalls.map((call, index) => ({ id: call.id, name: call.name, arguments: call.arguments, thought: index === 0 ? response.content : '' })) };
}

function textCall(response: ChatResponse, sequence: number): { calls: PendingCall[] } | { error: string } {
  const parsed = parseTextToolCall(response.content, { sequence, tools: toolDefinitions });
  if (!parsed.ok) return { error: parsed.error };
  return { calls: [{ id: parsed.call.id, name: parsed.call.name, arguments: parsed.call.arguments, thought: parsed.thought }] };
}
