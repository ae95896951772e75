import { describe, expect, it } from '@jest/globals';
import type { ToolStep, Usage } from '@ratchet/contracts';
import { ChatRole, ScriptedModel, ToolProtocol, type ChatMessage, type ScriptedTurn } from '@ratchet/llm';
import { agentStopRules, applyEdit, parseToolCall, runAgent, stopReason, type AgentLimits, type AgentPorts, type ToolOutcome } from '../src';
import type { ValidCall } from '../src/domain/agent-tools';

const limits: AgentLimits = { maxSteps: 10, maxModelCalls: 0, maxTokens: 0, wallTimeMs: 60_000 };
const initial: ChatMessage[] = [
  { role: 'system', content: 'you are the coder' },
  { role: 'user', content: 'fix add()' },
];

/** Ports over a scripted model and a map of files, recording what the loop did. */
function ports(turns: ScriptedTurn[], files: Record<string, string> = { 'calc.py': 'def add(a, b):\n    return a - b\n' }, order: 'strict' | 'by-expect' = 'strict') {
  const model = new ScriptedModel(turns, { order });
  const executed: ValidCall[] = [];
  const recorded: ToolStep[] = [];
  let clock = 0;
  const agentPorts: AgentPorts = {
    complete: async (messages, tools) => {
      const response = await model.complete({ role: ChatRole.CODER, messages, ...(tools === undefined ? {} : { tools }) });
      const usage: Usage = { ...response.usage, costUsd: 0, modelCalls: 1 };
      return { response, usage };
    },
    execute: async (call): Promise<ToolOutcome> => {
      executed.push(call);
      if (call.tool === 'read_file') return files[call.args.path] === undefined ? { result: `cannot read ${call.args.path}: no such file`, failed: true } : { result: files[call.args.path] as string, failed: false };
      if (call.tool === 'edit_file') {
        const edited = applyEdit(call.args.path, files[call.args.path] ?? '', call.args.search, call.args.replace);
        if (!edited.ok) return { result: edited.error, failed: true };
        files[call.args.path] = edited.content;
        return { result: `edited ${call.args.path}`, failed: false };
      }
      if (call.tool === 'run') return { result: 'exit code 0', failed: false, decision: 'allow' };
      return { result: 'ok', failed: false };
    },
    record: async (step) => {
      recorded.push(step);
    },
    fit: (messages) => messages,
    now: () => (clock += 10),
  };
  return { model, agentPorts, executed, recorded, files };
}

describe('runAgent', () => {
  it('runs the tools the model calls, gives back their results, records every step and stops at finish', async () => {
    const { model, agentPorts, recorded, files } = ports([
      { role: 'coder', reply: 'Reading the code first.', toolCalls: [{ name: 'read_file', arguments: { path: 'calc.py' } }] },
      { role: 'coder', expect: ['return a - b'], toolCalls: [{ name: 'edit_file', arguments: { path: 'calc.py', search: 'a - b', replace: 'a + b' } }] },
      { role: 'coder', expect: ['edited calc.py'], toolCalls: [{ name: 'finish', arguments: { summary: 'fixed the sign' } }] },
    ]);
    const run = await runAgent(initial, ToolProtocol.NATIVE, agentPorts, limits);
    expect(run).toMatchObject({ finished: true, summary: 'fixed the sign' });
    expect(files['calc.py']).toContain('a + b');
    expect(recorded.map((step) => `${step.number}:${step.tool}:${step.failed}`)).toEqual(['1:read_file:false', '2:edit_file:false', '3:finish:false']);
    expect(recorded[0]?.thought).toBe('Reading the code first.');
    expect(run.usage.modelCalls).toBe(3);
    expect(model.remaining).toBe(0);
    // The tool results went back as tool messages answering each call's id.
    const last = model.calls.at(-1)?.request.messages.at(-1);
    expect(last).toMatchObject({ role: 'tool', name: 'edit_file', content: 'edited calc.py' });
  });

  it('tells the model about an unknown tool, bad arguments, an edit that matches twice and a reply without a call, as failed steps', async () => {
    const { agentPorts, recorded, executed } = ports(
      [
        { role: 'coder', toolCalls: [{ name: 'delete_everything', arguments: {} }] },
        { role: 'coder', expect: ['unknown tool "delete_everything"', 'list_files'], toolCalls: [{ name: 'read_file', arguments: '{"path": ' }] },
        { role: 'coder', expect: ['not valid JSON'], toolCalls: [{ name: 'read_file', arguments: { file: 'calc.py' } }] },
        { role: 'coder', expect: ['bad arguments for read_file'], toolCalls: [{ name: 'edit_file', arguments: { path: 'calc.py', search: 'b', replace: 'c' } }] },
        { role: 'coder', expect: ['occurs 2 times in calc.py'], reply: 'I think I am done.' },
        { role: 'coder', expect: ['called no tool'], toolCalls: [{ name: 'finish', arguments: { summary: 'gave up' } }] },
      ],
      { 'calc.py': 'def add(a, b):\n    return a - b\n' },
    );
    const run = await runAgent(initial, ToolProtocol.NATIVE, agentPorts, limits);
    expect(run.finished).toBe(true);
    expect(recorded.map((step) => `${step.tool}:${step.failed}`)).toEqual(['delete_everything:true', 'read_file:true', 'read_file:true', 'edit_file:true', '(none):true', 'finish:false']);
    // Only the edit reached the tools; the rest failed validation first.
    expect(executed.map((call) => call.tool)).toEqual(['edit_file']);
  });

  it('stops before the model call that would pass a bound, saying which', async () => {
    const byExpect: ScriptedTurn = { role: 'coder', expect: ['fix add()'], toolCalls: [{ name: 'run', arguments: { command: 'true' } }], times: 100 };
    const steps = ports([byExpect], undefined, 'by-expect');
    const stepped = await runAgent(initial, ToolProtocol.NATIVE, steps.agentPorts, { ...limits, maxSteps: 3 });
    expect(stepped).toMatchObject({ finished: false, summary: expect.stringContaining('used its 3 tool steps (coder.maxSteps)') });
    expect(steps.recorded).toHaveLength(3);
    const timed = ports([byExpect], undefined, 'by-expect');
    const late = await runAgent(initial, ToolProtocol.NATIVE, timed.agentPorts, { ...limits, wallTimeMs: 45 });
    expect(late.summary).toContain('coder.phaseTimeoutSeconds');
    const calls = ports([byExpect], undefined, 'by-expect');
    const counted = await runAgent(initial, ToolProtocol.NATIVE, calls.agentPorts, { ...limits, maxModelCalls: 2 });
    expect(counted.usage.modelCalls).toBe(2);
    expect(counted.summary).toContain('model calls are used up');
  });

  it('stops by one list of named rules, the first that holds deciding, as the task loop does', () => {
    expect(agentStopRules.map((rule) => rule.name)).toEqual(['tool-steps', 'model-calls', 'token-budget', 'wall-time']);
    const used = (modelCalls: number, tokens: number): Usage => ({ promptTokens: tokens, completionTokens: 0, costUsd: 0, modelCalls });
    const bounded = { maxSteps: 5, maxModelCalls: 3, maxTokens: 1_000, wallTimeMs: 10_000 };
    expect(stopReason(4, used(2, 999), 9_999, bounded)).toBeUndefined();
    // Every bound passed at once: the steps come first.
    expect(stopReason(5, used(3, 1_000), 10_000, bounded)).toContain('used its 5 tool steps');
    expect(stopReason(0, used(3, 1_000), 10_000, bounded)).toContain('model calls are used up (3 in this phase)');
    expect(stopReason(0, used(0, 1_000), 10_000, bounded)).toContain("token budget is used up (1000 tokens in this phase)");
    expect(stopReason(0, used(0, 0), 10_000, bounded)).toContain('ran for its 10 s');
    // A task with no call or token budget left unset (0) never stops the phase for them.
    expect(stopReason(0, used(99, 99_999), 0, { ...bounded, maxModelCalls: 0, maxTokens: 0 })).toBeUndefined();
  });

  it('speaks the plain-text protocol: one fenced block per reply, results as user messages', async () => {
    const { agentPorts, recorded, model } = ports([
      { role: 'coder', reply: 'Run the tests.\n```bash\npython3 -m pytest -q\n```' },
      { role: 'coder', expect: ['<tool_result name="run">', 'exit code 0'], reply: 'Two blocks:\n```bash\nls\n```\n```bash\npwd\n```' },
      { role: 'coder', expect: ['exactly one'], reply: '```tool\n{"tool": "finish", "arguments": {"summary": "done"}}\n```' },
    ]);
    const run = await runAgent(initial, ToolProtocol.TEXT, agentPorts, limits);
    expect(run).toMatchObject({ finished: true, summary: 'done' });
    expect(recorded.map((step) => `${step.tool}:${step.failed}`)).toEqual(['run:false', '(none):true', 'finish:false']);
    // No tools are offered to the API in text mode.
    expect(model.calls.every((call) => call.request.tools === undefined)).toBe(true);
  });
});

describe('tool calls and edits', () => {
  it('validates arguments against each tool', () => {
    expect(parseToolCall('read_file', '{"path":"a.py","start_line":3}')).toEqual({ ok: true, call: { tool: 'read_file', args: { path: 'a.py', start_line: 3 } } });
    expect(parseToolCall('run', '{"command":""}')).toMatchObject({ ok: false, error: expect.stringContaining('bad arguments for run: command') });
    expect(parseToolCall('finish', '')).toMatchObject({ ok: false, error: expect.stringContaining('summary') });
  });

  it('edits exactly one match, and explains a miss', () => {
    expect(applyEdit('a.py', 'x = 1\ny = 2\n', 'y = 2', 'y = 3')).toEqual({ ok: true, content: 'x = 1\ny = 3\n' });
    expect(applyEdit('a.py', 'x = 1\n', '1| x = 1', 'x = 2')).toMatchObject({ ok: false, error: expect.stringContaining('line numbers') });
    expect(applyEdit('a.py', 'if x:\n    y = 1\n', 'if x:\n  y = 1', 'z')).toMatchObject({ ok: false, error: expect.stringContaining('indentation') });
    expect(applyEdit('a.py', 'a\na\n', 'a', 'b')).toMatchObject({ ok: false, error: expect.stringContaining('occurs 2 times') });
    // A replacement holding `$&` is inserted as written.
    expect(applyEdit('a.py', 'x = 1\n', 'x = 1', "x = '$&'")).toEqual({ ok: true, content: "x = '$&'\n" });
  });
});
