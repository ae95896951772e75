import { parseToolArguments, readFileArguments, readFileTool } from '@ratchet/prompting';
import type { ToolDefinition } from '@ratchet/llm';
import { z } from 'zod';

/** The agentic coder's tools, by name. */
export const ToolName = {
  LIST_FILES: 'list_files',
  READ_FILE: 'read_file',
  SEARCH: 'search',
  EDIT_FILE: 'edit_file',
  WRITE_FILE: 'write_file',
  RUN: 'run',
  FINISH: 'finish',
} as const;
export type ToolName = (typeof ToolName)[keyof typeof ToolName];

const pathField = z.string().min(1).max(255);

/** Each tool's arguments, validated before anything runs. */
export const toolArguments = {
  [ToolName.LIST_FILES]: z.strictObject({ directory: z.string().max(255).optional() }),
  [ToolName.READ_FILE]: readFileArguments,
  [ToolName.SEARCH]: z.strictObject({ pattern: z.string().min(1).max(500), path: z.string().max(255).optional() }),
  [ToolName.EDIT_FILE]: z.strictObject({ path: pathField, search: z.string().min(1), replace: z.string() }),
  [ToolName.WRITE_FILE]: z.strictObject({ path: pathField, content: z.string() }),
  [ToolName.RUN]: z.strictObject({ command: z.string().min(1).max(10_000), timeout_seconds: z.number().int().min(1).max(600).optional() }),
  [ToolName.FINISH]: z.strictObject({ summary: z.string().min(1).max(4_000) }),
} as const;

export type ToolArguments = { readonly [K in ToolName]: z.infer<(typeof toolArguments)[K]> };

/** A tool call whose arguments passed validation. */
export type ValidCall = { readonly [K in ToolName]: { readonly tool: K; readonly args: ToolArguments[K] } }[ToolName];

/** The tools as offered to the model (OpenAI function schemas; the text protocol describes the same). */
export const toolDefinitions: readonly ToolDefinition[] = [
  {
    name: ToolName.LIST_FILES,
    description: 'List the files under a directory of the workspace (default: the whole workspace), with their sizes.',
    parameters: { type: 'object', properties: { directory: { type: 'string', description: 'Directory relative to the workspace root; omit for the root.' } }, additionalProperties: false },
  },
  readFileTool,
  {
    name: ToolName.SEARCH,
    description: 'Search the workspace for a regular expression (POSIX extended, as grep -E); returns file:line: text for each hit.',
    parameters: { type: 'object', properties: { pattern: { type: 'string' }, path: { type: 'string', description: 'File or directory to search; omit for the whole workspace.' } }, required: ['pattern'], additionalProperties: false },
  },
  {
    name: ToolName.EDIT_FILE,
    description: 'Replace one exact piece of a file: `search` must occur exactly once in the file (copy it from read_file without the line numbers, with enough lines to be unique); it is replaced by `replace`.',
    parameters: { type: 'object', properties: { path: { type: 'string' }, search: { type: 'string' }, replace: { type: 'string' } }, required: ['path', 'search', 'replace'], additionalProperties: false },
  },
  {
    name: ToolName.WRITE_FILE,
    description: 'Create a file, or replace a whole file, with the given content.',
    parameters: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'], additionalProperties: false },
  },
  {
    name: ToolName.RUN,
    description:
      "Run a command line in the workspace (an isolated sandbox without network), for example the tests. It runs as `sh -c COMMAND` (POSIX sh, not bash: no ${PIPESTATUS}, no [[ ]]) from the workspace root; the result starts with the exit code of the whole line (in a pipe, the last command's), then stdout and stderr, each capped.",
    parameters: { type: 'object', properties: { command: { type: 'string' }, timeout_seconds: { type: 'integer', minimum: 1, maximum: 600 } }, required: ['command'], additionalProperties: false },
  },
  {
    name: ToolName.FINISH,
    description: 'End the coding phase when the change is complete (the tests pass), with a summary of what you changed and why.',
    parameters: { type: 'object', properties: { summary: { type: 'string' } }, required: ['summary'], additionalProperties: false },
  },
];

/**
 * Validates a call: a known tool, JSON arguments, the tool's schema.
 * Returns the call, or the error to tell the model (it names the tools or the
 * bad field and what was expected).
 */
export function parseToolCall(name: string, argumentsText: string): { ok: true; call: ValidCall } | { ok: false; error: string } {
  if (!(Object.values(ToolName) as string[]).includes(name)) {
    return { ok: false, error: `unknown tool ${JSON.stringify(name.slice(0, 100))}; the tools are ${Object.values(ToolName).join(', ')}` };
  }
  const parsed = parseToolArguments(name, argumentsText, toolArguments[name as ToolName] as z.ZodType<unknown>);
  if (!parsed.ok) return parsed;
  return { ok: true, call: { tool: name, args: parsed.value } as ValidCall };
}

/**
 * Applies one search/replace edit: `search` must occur exactly once.
 * Returns the new content, or the error for the model with the number of
 * matches found and what to do.
 */
export function applyEdit(path: string, content: string, search: string, replace: string): { ok: true; content: string } | { ok: false; error: string } {
  const matches = countOccurrences(content, search);
  if (matches === 1) return { ok: true, content: content.replace(search, () => replace) };
  if (matches > 1) return { ok: false, error: `the search text occurs ${matches} times in ${path}; include more surrounding lines so it matches exactly once` };
  // A common slip: the model kept read_file's line numbers, or changed the indentation.
  const hint = /^\s*\d+[:|]/m.test(search) ? ' (it looks like it includes line numbers from read_file; leave them out)' : countOccurrences(normalise(content), normalise(search)) > 0 ? ' (it matches only when whitespace is ignored: copy the indentation exactly)' : '';
  return { ok: false, error: `the search text was not found in ${path}${hint}; read the file again and copy the text exactly` };
}

function countOccurrences(haystack: string, needle: string): number {
  let count = 0;
  for (let index = haystack.indexOf(needle); index !== -1; index = haystack.indexOf(needle, index + needle.length)) count += 1;
  return count;
}

function normalise(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
