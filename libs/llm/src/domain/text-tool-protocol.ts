import type { ToolCall, ToolDefinition } from './chat-model';

// The plain-text tool protocol, for models and servers without native tool
// calling: tools are described in the system prompt and every reply carries
// exactly one fenced block naming one call, as mini-swe-agent does. One call
// per reply keeps the loop simple and makes "what did the model ask for"
// unambiguous; anything else is an error the model is told how to fix.

/** The fence info string of a tool call block. */
const toolFence = 'tool';
/** Info strings that mean "run this shell command". */
const shellFences: readonly string[] = ['bash', 'sh', 'shell'];
const defaultShellTool = 'run';

export interface TextToolProtocolOptions {
  /**
   * The tool a ```bash block stands for; the block's text becomes its
   * `command` argument. Default `run`. The shorthand is only offered and
   * accepted when this tool is among the tools (or no tools are given).
   */
  readonly shellTool?: string;
}

export interface ParseTextToolCallOptions extends TextToolProtocolOptions {
  /** The id given to the call. Default `text-<sequence>`. */
  readonly id?: string;
  /** Used for the default id, so a conversation's calls are `text-1`, `text-2`, ... Default 1. */
  readonly sequence?: number;
  /** When given, a call of any other tool is an error that lists these names. */
  readonly tools?: readonly ToolDefinition[];
}

/** What `parseTextToolCall` makes of a reply. */
export type TextToolCallParse =
  | {
      readonly ok: true;
      /** `arguments` is the JSON text of the arguments object (re-serialized, so always valid JSON). */
      readonly call: ToolCall;
      /** The reply's text before and after the block (each trimmed, joined by a blank line): the model's reasoning. */
      readonly thought: string;
    }
  | {
      readonly ok: false;
      /** What to tell the model, in words it can act on. */
      readonly error: string;
    };

/**
 * Instructions for the system prompt: the tools with their JSON Schemas and
 * the reply format (one ```tool block per reply; a ```bash block as
 * shorthand for the shell tool when it is offered). Deterministic for the
 * same input.
 */
export function describeToolsAsText(tools: readonly ToolDefinition[], options: TextToolProtocolOptions = {}): string {
  const shellTool = options.shellTool ?? defaultShellTool;
  const hasShell = tools.some((tool) => tool.name === shellTool);
  const example = tools[0]?.name ?? 'TOOL_NAME';
  const lines = [
    '## How to call tools',
    '',
    'You act by calling tools, one call per reply. Write your reasoning first, in plain text, then end the reply with exactly one fenced block like this:',
    '',
    '```' + toolFence,
    `{"tool": "${example}", "arguments": {...}}`,
    '```',
    '',
    'The block holds one JSON object: "tool" is the tool name and "arguments" an object matching that tool\'s parameters. The result comes back in the next message. A reply with no block, or with more than one, is not executed.',
  ];
  if (hasShell) {
    lines.push(
      '',
      `To run a shell command you may instead end the reply with a \`\`\`bash block; it means "${shellTool}" with that command:`,
      '',
      '```bash',
      'ls -la',
      '```',
    );
  }
  lines.push('', '## Tools');
  for (const tool of tools) {
    lines.push('', `### ${tool.name}`, tool.description, `Parameters (JSON Schema): ${JSON.stringify(tool.parameters)}`);
  }
  return lines.join('\n');
}

/**
 * Reads the one tool call of a text-protocol reply. A ```tool block holds
 * `{"tool": name, "arguments": {...}}` (without "arguments", the other keys
 * are taken as the arguments; arguments given as a JSON string are parsed);
 * a ```bash (or ```sh, ```shell) block means the shell tool with
 * `{"command": text}`. Other fenced blocks (```python, ```json) are part of
 * the thought.
 *
 * @returns `ok: false` with a message for the model when the reply has no
 *   call block, more than one, an unclosed one, invalid JSON, or (with
 *   `options.tools`) an unknown tool. Never throws.
 */
export function parseTextToolCall(replyText: string, options: ParseTextToolCallOptions = {}): TextToolCallParse {
  const shellTool = options.shellTool ?? defaultShellTool;
  const known = options.tools?.map((tool) => tool.name);
  const shellOffered = known === undefined || known.includes(shellTool);
  const { blocks, unclosed } = fencedBlocks(replyText);
  const isAction = (info: string): boolean => info === toolFence || (shellOffered && shellFences.includes(info));
  const actions = blocks.filter((block) => isAction(block.info));
  const accepted = shellOffered ? '```tool or ```bash block' : '```tool block';

  if (unclosed !== undefined && isAction(unclosed.info)) {
    return { ok: false, error: `Your \`\`\`${unclosed.info} block is not closed: end it with a line holding only \`\`\`. Send exactly one ${accepted} per reply.` };
  }
  if (actions.length === 0) {
    const others = [...new Set(blocks.map((block) => (block.info === '' ? '```' : '```' + block.info)))];
    const seen = others.length === 0 ? 'no fenced block' : `only ${others.join(', ')} block(s), which are not calls`;
    return { ok: false, error: `Found ${seen}. End your reply with exactly one ${accepted} naming the tool to call.` };
  }
  if (actions.length > 1) {
    return { ok: false, error: `Found ${actions.length} call blocks (${actions.map((block) => '```' + block.info).join(', ')}); send exactly one ${accepted} per reply and wait for its result.` };
  }

  const block = actions[0] as FencedBlock;
  const thought = [replyText.slice(0, block.start).trim(), replyText.slice(block.end).trim()].filter((part) => part !== '').join('\n\n');
  const id = options.id ?? `text-${options.sequence ?? 1}`;

  if (block.info !== toolFence) {
    const command = block.body.trim();
    if (command === '') return { ok: false, error: `Your \`\`\`${block.info} block is empty; put the command to run inside it.` };
    return { ok: true, call: { id, name: shellTool, arguments: JSON.stringify({ command }) }, thought };
  }

  const read = readToolBlock(block.body);
  if (!read.ok) return read;
  if (known !== undefined && !known.includes(read.name)) {
    return { ok: false, error: `There is no tool "${read.name}". Call one of: ${known.join(', ')}.` };
  }
  return { ok: true, call: { id, name: read.name, arguments: JSON.stringify(read.arguments) }, thought };
}

/**
 * The user message that carries a tool's result back under the text
 * protocol: the result between `<tool_result name="...">` tags, which, unlike
 * a fence, survive results that contain fences themselves.
 */
export function formatToolResultAsText(name: string, result: string): string {
  return `<tool_result name="${name}">\n${result}\n</tool_result>`;
}

interface FencedBlock {
  /** Lower-cased first word of the info string; '' when there is none. */
  readonly info: string;
  readonly body: string;
  /** Offsets of the whole block, fences included, in the reply. */
  readonly start: number;
  readonly end: number;
}

/**
 * The fenced blocks of a Markdown text: an opening line of three or more
 * backticks or tildes (indented at most three spaces), closed by a line of
 * the same character at least as long (CommonMark's rule, so a block may
 * contain shorter fences). A block left open runs to the end of the text.
 */
function fencedBlocks(text: string): { blocks: FencedBlock[]; unclosed?: FencedBlock } {
  const blocks: FencedBlock[] = [];
  const lines = text.split('\n');
  let offset = 0;
  let open: { fence: string; info: string; start: number; bodyStart: number } | undefined;
  for (const line of lines) {
    const lineEnd = offset + line.length;
    const next = Math.min(text.length, lineEnd + 1);
    const bare = line.replace(/\r$/, '');
    if (open === undefined) {
      const opening = /^ {0,3}(`{3,}|~{3,})\s*([^\s`]*)/.exec(bare);
      if (opening !== null) open = { fence: opening[1] as string, info: (opening[2] as string).toLowerCase(), start: offset, bodyStart: next };
    } else {
      const closing = /^ {0,3}(`{3,}|~{3,})\s*$/.exec(bare);
      const fence = closing?.[1];
      if (fence !== undefined && fence[0] === open.fence[0] && fence.length >= open.fence.length) {
        blocks.push({ info: open.info, body: text.slice(open.bodyStart, offset), start: open.start, end: lineEnd });
        open = undefined;
      }
    }
    offset = next;
  }
  if (open === undefined) return { blocks };
  return { blocks, unclosed: { info: open.info, body: text.slice(open.bodyStart), start: open.start, end: text.length } };
}

type ToolBlockRead = { ok: true; name: string; arguments: Record<string, unknown> } | { ok: false; error: string };

const toolBlockShape = '{"tool": "<name>", "arguments": {...}}';

function readToolBlock(body: string): ToolBlockRead {
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return { ok: false, error: `The \`\`\`tool block is not valid JSON (${reason}). Send one JSON object: ${toolBlockShape}, with strings quoted and newlines escaped as \\n.` };
  }
  if (!isRecord(value)) return { ok: false, error: `The \`\`\`tool block must hold one JSON object, ${toolBlockShape}; it held ${describe(value)}.` };
  const name = value['tool'];
  if (typeof name !== 'string' || name === '') {
    return { ok: false, error: `The \`\`\`tool block has no "tool" name (a string). Send ${toolBlockShape}.` };
  }
  if (!('arguments' in value)) {
    // Models often flatten the arguments into the top level; that is unambiguous, so it is accepted.
    const rest = Object.fromEntries(Object.entries(value).filter(([key]) => key !== 'tool'));
    return { ok: true, name, arguments: rest };
  }
  let args: unknown = value['arguments'];
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch {
      return { ok: false, error: `"arguments" of ${name} must be a JSON object, not a string. Send ${toolBlockShape}.` };
    }
  }
  if (args === null) args = {};
  if (!isRecord(args)) return { ok: false, error: `"arguments" of ${name} must be a JSON object; it was ${describe(args)}. Send ${toolBlockShape}.` };
  return { ok: true, name, arguments: args };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return 'an array';
  if (value === null) return 'null';
  return `a ${typeof value}`;
}
