import type { ToolDefinition } from './chat-model';
import { describeToolsAsText, formatToolResultAsText, parseTextToolCall, type TextToolCallParse } from './text-tool-protocol';

const tools: ToolDefinition[] = [
  {
    name: 'read_file',
    description: 'Read lines of a file.',
    parameters: { type: 'object', properties: { path: { type: 'string' }, start_line: { type: 'integer' }, end_line: { type: 'integer' } }, required: ['path'] },
  },
  { name: 'run', description: 'Run a shell command in the workspace.', parameters: { type: 'object', properties: { command: { type: 'string' } }, required: ['command'] } },
  { name: 'finish', description: 'Say the work is done.', parameters: { type: 'object', properties: { summary: { type: 'string' } } } },
];

function fence(info: string, body: string): string {
  return ['```' + info, body, '```'].join('\n');
}

function errorOf(parse: TextToolCallParse): string {
  if (parse.ok) throw new Error(`expected a parse error, got ${JSON.stringify(parse.call)}`);
  return parse.error;
}

describe('parseTextToolCall', () => {
  it('reads the one ```tool block, with the text around it as the thought', () => {
    const reply = ['The bug is in a.py; let me read it.', '', fence('tool', '{"tool": "read_file", "arguments": {"path": "src/a.py", "start_line": 1, "end_line": 40}}'), '', 'Then I will fix it.'].join('\n');

    expect(parseTextToolCall(reply, { tools, sequence: 3 })).toEqual({
      ok: true,
      call: { id: 'text-3', name: 'read_file', arguments: '{"path":"src/a.py","start_line":1,"end_line":40}' },
      thought: 'The bug is in a.py; let me read it.\n\nThen I will fix it.',
    });
  });

  it('takes the id from the caller, else text-1', () => {
    const reply = fence('tool', '{"tool": "finish", "arguments": {}}');
    expect(parseTextToolCall(reply, { id: 'call-7' })).toMatchObject({ ok: true, call: { id: 'call-7' }, thought: '' });
    expect(parseTextToolCall(reply)).toMatchObject({ ok: true, call: { id: 'text-1' } });
  });

  it('reads a ```bash block as run with that command', () => {
    const reply = ['Run the tests.', fence('bash', 'cd src && pytest -q \\\n  tests/test_a.py')].join('\n');

    expect(parseTextToolCall(reply, { tools })).toEqual({
      ok: true,
      call: { id: 'text-1', name: 'run', arguments: JSON.stringify({ command: 'cd src && pytest -q \\\n  tests/test_a.py' }) },
      thought: 'Run the tests.',
    });
    expect(parseTextToolCall(fence('sh', 'ls'), { shellTool: 'shell_exec' })).toMatchObject({ ok: true, call: { name: 'shell_exec', arguments: '{"command":"ls"}' } });
  });

  it('refuses a reply with two call blocks', () => {
    const reply = [fence('tool', '{"tool": "read_file", "arguments": {"path": "a.py"}}'), fence('bash', 'pytest')].join('\n\n');

    expect(errorOf(parseTextToolCall(reply, { tools }))).toBe('Found 2 call blocks (```tool, ```bash); send exactly one ```tool or ```bash block per reply and wait for its result.');
  });

  it('refuses a reply with no block, naming blocks that are not calls', () => {
    expect(errorOf(parseTextToolCall('I think the fix is done.', { tools }))).toBe('Found no fenced block. End your reply with exactly one ```tool or ```bash block naming the tool to call.');
    expect(errorOf(parseTextToolCall(fence('python', 'print(1)'), { tools }))).toContain('Found only ```python block(s), which are not calls.');
  });

  it('keeps other fenced blocks in the thought', () => {
    const reply = ['The new function:', fence('python', 'def f():\n    return 1'), fence('tool', '{"tool": "finish"}')].join('\n');

    const parse = parseTextToolCall(reply, { tools });

    expect(parse).toMatchObject({ ok: true, call: { name: 'finish', arguments: '{}' } });
    expect(parse.ok && parse.thought).toBe('The new function:\n```python\ndef f():\n    return 1\n```');
  });

  it('says what is wrong with invalid JSON', () => {
    const error = errorOf(parseTextToolCall(fence('tool', '{"tool": "read_file", "arguments": {"path": "a.py",}}'), { tools }));

    expect(error).toMatch(/^The ```tool block is not valid JSON \(.+\)\. Send one JSON object: \{"tool": "<name>", "arguments": \{\.\.\.\}\}/);
  });

  it('refuses a block that is not a tool object, and a missing tool name', () => {
    expect(errorOf(parseTextToolCall(fence('tool', '["read_file"]')))).toContain('it held an array');
    expect(errorOf(parseTextToolCall(fence('tool', '{"name": "read_file"}')))).toContain('has no "tool" name');
    expect(errorOf(parseTextToolCall(fence('tool', '{"tool": "read_file", "arguments": 3}')))).toContain('"arguments" of read_file must be a JSON object; it was a number');
  });

  it('accepts arguments flattened into the object or given as a JSON string', () => {
    expect(parseTextToolCall(fence('tool', '{"tool": "read_file", "path": "a.py"}'), { tools })).toMatchObject({ ok: true, call: { arguments: '{"path":"a.py"}' } });
    expect(parseTextToolCall(fence('tool', '{"tool": "read_file", "arguments": "{\\"path\\": \\"a.py\\"}"}'), { tools })).toMatchObject({ ok: true, call: { arguments: '{"path":"a.py"}' } });
  });

  it('refuses an unknown tool, listing the known ones', () => {
    expect(errorOf(parseTextToolCall(fence('tool', '{"tool": "delete", "arguments": {}}'), { tools }))).toBe('There is no tool "delete". Call one of: read_file, run, finish.');
  });

  it('does not take ```bash as a call when the shell tool is not offered', () => {
    const error = errorOf(parseTextToolCall(fence('bash', 'ls'), { tools: tools.filter((tool) => tool.name !== 'run') }));
    expect(error).toBe('Found only ```bash block(s), which are not calls. End your reply with exactly one ```tool block naming the tool to call.');
  });

  it('refuses an unclosed block and an empty bash block', () => {
    expect(errorOf(parseTextToolCall('Reading.\n```tool\n{"tool": "finish"}', { tools }))).toContain('Your ```tool block is not closed');
    expect(errorOf(parseTextToolCall(fence('bash', '  '), { tools }))).toBe('Your ```bash block is empty; put the command to run inside it.');
  });

  it('lets a longer fence hold a shorter one, as CommonMark does', () => {
    const reply = ['````bash', "cat > notes.md <<'EOF'", '```', 'code', '```', 'EOF', '````'].join('\n');

    const parse = parseTextToolCall(reply, { tools });

    expect(parse).toMatchObject({ ok: true, call: { name: 'run', arguments: JSON.stringify({ command: "cat > notes.md <<'EOF'\n```\ncode\n```\nEOF" }) } });
  });

  it('reads replies with CRLF line ends', () => {
    const reply = 'Done.\r\n```tool\r\n{"tool": "finish", "arguments": {"summary": "ok"}}\r\n```\r\n';
    expect(parseTextToolCall(reply, { tools })).toEqual({ ok: true, call: { id: 'text-1', name: 'finish', arguments: '{"summary":"ok"}' }, thought: 'Done.' });
  });
});

describe('describeToolsAsText', () => {
  it('lists every tool with its schema and explains the block format and the bash shorthand', () => {
    const text = describeToolsAsText(tools);

    expect(text).toContain('exactly one fenced block');
    expect(text).toContain('```tool\n{"tool": "read_file", "arguments": {...}}\n```');
    expect(text).toContain('```bash block; it means "run"');
    for (const tool of tools) {
      expect(text).toContain(`### ${tool.name}\n${tool.description}\nParameters (JSON Schema): ${JSON.stringify(tool.parameters)}`);
    }
    expect(describeToolsAsText(tools)).toBe(text);
  });

  it('leaves the bash shorthand out when there is no shell tool', () => {
    expect(describeToolsAsText(tools.filter((tool) => tool.name !== 'run'))).not.toContain('```bash');
  });
});

describe('formatToolResultAsText', () => {
  it('wraps the result in tags that survive fences inside it', () => {
    expect(formatToolResultAsText('run', '```\n1 failed\n```')).toBe('<tool_result name="run">\n```\n1 failed\n```\n</tool_result>');
  });
});
