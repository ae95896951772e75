import { runInNewContext } from 'node:vm';
import type { SourceFile, ToolStep } from '@ratchet/contracts';
import type { ToolCall, ToolDefinition } from '@ratchet/llm';
import { z } from 'zod';
import { durationFromMs } from '@ratchet/agent';
import { capText, numberLines } from '@ratchet/agent';
import { countTokens, truncateToTokens } from '@ratchet/agent';

// Read-only lookups over a task's files as a role already holds them (no
// sandbox, no process): `read_file` and `search`, for a role that answers
// with one structured reply but may look at the project first (the planner
// of a workspace task). Every result is cut to what is left of the
// lookups' token share, so the conversation stays inside the role's prompt
// budget however the model asks.

/** The arguments of read_file, as the coder's tool takes them too. */
export const readFileArguments = z.strictObject({ path: z.string().min(1).max(255), start_line: z.number().int().min(1).optional(), end_line: z.number().int().min(1).optional() });

/** read_file as offered to a model (the coder's reads its sandbox, a lookup the files in memory: the same call). */
export const readFileTool: ToolDefinition = {
  name: 'read_file',
  description: 'Read a text file, with line numbers. Give start_line and end_line to read part of a long file.',
  parameters: {
    type: 'object',
    properties: { path: { type: 'string' }, start_line: { type: 'integer', minimum: 1 }, end_line: { type: 'integer', minimum: 1 } },
    required: ['path'],
    additionalProperties: false,
  },
};

const searchArguments = z.strictObject({ pattern: z.string().min(1).max(500), path: z.string().max(255).optional() });

/** The lookup tools: read_file and a search over the files in memory. */
export const lookupTools: readonly ToolDefinition[] = [
  readFileTool,
  {
    name: 'search',
    description:
      'Search the files for a JavaScript regular expression, line by line (case-sensitive; (?i:...) ignores case); returns path:line: text for each hit. Give path (a file or a directory) to search part of the project.',
    parameters: { type: 'object', properties: { pattern: { type: 'string' }, path: { type: 'string', description: 'File or directory to search; omit for every file.' } }, required: ['pattern'], additionalProperties: false },
  },
];

export interface LookupLimits {
  /** Tool calls answered; later ones are told the lookups are used up. */
  readonly maxCalls: number;
  /** Tokens all results together may take. */
  readonly maxTokens: number;
}

/**
 * A tool call's arguments checked against its schema: the value, or what
 * to tell the model (not JSON, or which field is wrong and how). Empty
 * arguments count as `{}`.
 */
export function parseToolArguments<T>(name: string, argumentsText: string, schema: z.ZodType<T>): { ok: true; value: T } | { ok: false; error: string } {
  let value: unknown;
  try {
    value = argumentsText.trim() === '' ? {} : JSON.parse(argumentsText);
  } catch (error) {
    return { ok: false, error: `the arguments of ${name} are not valid JSON (${(error as Error).message}); send one JSON object` };
  }
  const result = schema.safeParse(value);
  if (result.success) return { ok: true, value: result.data };
  const problems = result.error.issues.map((issue) => `${issue.path.map(String).join('.') || '(arguments)'}: ${issue.message}`);
  return { ok: false, error: `bad arguments for ${name}: ${problems.join('; ')}` };
}

/** Hits one search shows. */
const maxHits = 40;
/** Characters of one hit's line. */
const maxHitChars = 240;
/** Lines one read shows at most. */
const maxReadLines = 300;
/** How long one search may run before it is stopped (a pattern that backtracks without end), ms. */
const searchTimeoutMs = 2_000;

/**
 * Answers a model's read_file and search calls from `files`, within
 * `limits`, and keeps each call as a step (for the task's record). A call
 * the model got wrong (unknown tool, bad arguments, no such file, an
 * invalid or runaway pattern) is answered with what was wrong; nothing
 * throws.
 */
export class WorkspaceLookup {
  private readonly byPath: ReadonlyMap<string, string>;
  private readonly recorded: ToolStep[] = [];
  private tokensLeft: number;

  constructor(
    private readonly files: readonly SourceFile[],
    private readonly limits: LookupLimits,
    private readonly now: () => number = Date.now,
  ) {
    this.byPath = new Map(files.map((file) => [file.path, file.content]));
    this.tokensLeft = limits.maxTokens;
  }

  /** The calls answered so far, in order. */
  get steps(): readonly ToolStep[] {
    return this.recorded;
  }

  /** What to tell the model for `call`. */
  run(call: ToolCall): Promise<string> {
    const started = this.now();
    const { result, failed } = this.answer(call);
    this.recorded.push({
      number: this.recorded.length + 1,
      tool: call.name.slice(0, 64),
      arguments: capText(call.arguments, 2_000),
      result: capText(result, 4_000),
      failed,
      decision: '',
      duration: durationFromMs(this.now() - started),
      thought: '',
    });
    return Promise.resolve(result);
  }

  private answer(call: ToolCall): { result: string; failed: boolean } {
    if (this.recorded.length >= this.limits.maxCalls) return { result: `not run: the ${this.limits.maxCalls} lookups are used up; reply now`, failed: true };
    if (this.tokensLeft <= 0) return { result: 'not run: the lookups have used their share of the prompt; reply now', failed: true };
    const parsed = this.parse(call);
    if ('error' in parsed) return { result: parsed.error, failed: true };
    const answered = parsed.tool === 'read_file' ? this.read(parsed.args) : this.search(parsed.args);
    if (answered.failed) return answered;
    const tokens = countTokens(answered.result);
    if (tokens <= this.tokensLeft) {
      this.tokensLeft -= tokens;
      return answered;
    }
    const cut = `${truncateToTokens(answered.result, Math.max(0, this.tokensLeft - 30))}\n[cut: the lookups' ${this.limits.maxTokens}-token share of the prompt is used up]`;
    this.tokensLeft = 0;
    return { result: cut, failed: false };
  }

  private parse(call: ToolCall): { tool: 'read_file'; args: z.infer<typeof readFileArguments> } | { tool: 'search'; args: z.infer<typeof searchArguments> } | { error: string } {
    const names = lookupTools.map((tool) => tool.name);
    if (!names.includes(call.name)) return { error: `unknown tool ${JSON.stringify(call.name.slice(0, 100))}; the tools are ${names.join(', ')}` };
    if (call.name === 'read_file') {
      const parsed = parseToolArguments(call.name, call.arguments, readFileArguments);
      return parsed.ok ? { tool: 'read_file', args: parsed.value } : parsed;
    }
    const parsed = parseToolArguments(call.name, call.arguments, searchArguments);
    return parsed.ok ? { tool: 'search', args: parsed.value } : parsed;
  }

  private read(args: z.infer<typeof readFileArguments>): { result: string; failed: boolean } {
    const path = normalize(args.path);
    const content = this.byPath.get(path);
    if (content === undefined) {
      const near = this.files.filter((file) => file.path.endsWith(`/${path.slice(path.lastIndexOf('/') + 1)}`)).map((file) => file.path);
      return { result: `no file ${path}${near.length === 0 ? '; search finds where a name is defined' : `; did you mean ${near.slice(0, 5).join(', ')}?`}`, failed: true };
    }
    const { text, shown, total } = numberLines(content, args.start_line ?? 1, args.end_line, maxReadLines);
    if (total === 0) return { result: `${path} is empty`, failed: false };
    const more = shown[1] < total ? `\n[lines ${shown[1] + 1}-${total} not shown: read them with start_line]` : '';
    const header = shown[0] === 1 && shown[1] === total ? `${path} (${total} lines)` : `${path} lines ${shown[0]}-${shown[1]} of ${total}`;
    return { result: `${header}\n${text}${more}`, failed: false };
  }

  private search(args: z.infer<typeof searchArguments>): { result: string; failed: boolean } {
    const scope = normalize(args.path ?? '');
    const files = this.files.filter((file) => scope === '' || file.path === scope || file.path.startsWith(`${scope}/`));
    if (files.length === 0) return { result: `no file is ${scope} or under it`, failed: true };
    try {
      new RegExp(args.pattern);
    } catch (error) {
      return { result: `invalid pattern: ${(error as Error).message}`, failed: true };
    }
    let found: { hits: string[]; total: number };
    try {
      // In a context with a timeout, so a pattern that backtracks without end is stopped instead of hanging the service.
      found = runInNewContext(searchScript, { files, pattern: args.pattern, maxHits, maxHitChars }, { timeout: searchTimeoutMs }) as { hits: string[]; total: number };
    } catch (error) {
      if ((error as { code?: string }).code === 'ERR_SCRIPT_EXECUTION_TIMEOUT') return { result: `the pattern took over ${searchTimeoutMs / 1000} s and was stopped; use a simpler one`, failed: true };
      throw error;
    }
    if (found.total === 0) return { result: `no match for ${JSON.stringify(args.pattern)}${scope === '' ? '' : ` in ${scope}`}`, failed: false };
    const more = found.total > found.hits.length ? `\n... ${found.total - found.hits.length} more hits; narrow the pattern or the path` : '';
    return { result: found.hits.join('\n') + more, failed: false };
  }
}

/** The search loop, run inside a context with a timeout: hits as `path:line: text`, and how many there were. */
const searchScript = `(() => {
  const expression = new RegExp(pattern);
  const hits = [];
  let total = 0;
  for (const file of files) {
    const lines = file.content.split('\\n');
    for (let index = 0; index < lines.length; index += 1) {
      if (!expression.test(lines[index])) continue;
      total += 1;
      if (hits.length < maxHits) hits.push(file.path + ':' + (index + 1) + ': ' + lines[index].trim().slice(0, maxHitChars));
    }
  }
  return { hits, total };
})()`;

function normalize(path: string): string {
  return path.trim().replace(/^\.\/+/, '').replace(/^\/+/, '').replace(/\/+$/, '');
}
