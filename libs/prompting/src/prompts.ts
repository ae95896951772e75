import { readFileSync } from 'node:fs';
import path from 'node:path';
import { AppError, ErrorCode } from '@ratchet/errors';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

const promptSchema = z.strictObject({ system: z.string().min(1), user: z.string().min(1) });

const promptsSchema = z.strictObject({
  planner: promptSchema,
  coder: promptSchema,
  coderAgent: promptSchema,
  tester: promptSchema,
  reflector: promptSchema,
  // The optional phases' roles: goal -> spec or questions, code review, security audit.
  reprompter: promptSchema,
  reviewer: promptSchema,
  auditor: promptSchema,
});

/** A role's system and user message templates with `{{name}}` placeholders. */
export type RolePrompt = z.infer<typeof promptSchema>;
export type Prompts = z.infer<typeof promptsSchema>;

/**
 * Reads `prompts.yaml` from `configDir` (default: `RATCHET_CONFIG_DIR`, else
 * `config/` under the working directory).
 *
 * @throws AppError CONFIG_INVALID naming the file and every bad key when the
 *   file is missing, is not YAML or lacks a role's `system`/`user` template.
 */
export function loadPrompts(configDir = process.env['RATCHET_CONFIG_DIR'] || path.resolve('config')): Prompts {
  const file = path.join(configDir, 'prompts.yaml');
  let data: unknown;
  try {
    data = parseYaml(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new AppError(ErrorCode.CONFIG_INVALID, `cannot read the prompts from ${file}: ${error instanceof Error ? error.message : String(error)}; set RATCHET_CONFIG_DIR to the directory holding prompts.yaml`, {
      cause: error,
    });
  }
  const result = promptsSchema.safeParse(data);
  if (!result.success) {
    const problems = result.error.issues.map((issue) => {
      const where = issue.path.map(String).join('.') || '(root)';
      // A prompts.yaml kept from an older version lacks the newer roles: say which, and where to copy them from.
      const missingRole = issue.path.length === 1 && typeof data === 'object' && data !== null && !Object.hasOwn(data, String(issue.path[0]));
      return missingRole ? `${where}: missing; add the role's system and user templates (copy them from the prompts.yaml Ratchet ships in config/)` : `${where}: ${issue.message}`;
    });
    throw new AppError(ErrorCode.CONFIG_INVALID, `${file} is invalid: ${problems.join('; ')}`);
  }
  return result.data;
}

/**
 * Checks that a prompt uses only `known` placeholders, at start, so a typo in
 * prompts.yaml fails loudly instead of reaching the model as literal text.
 *
 * @throws AppError CONFIG_INVALID listing the unknown placeholders.
 */
export function assertPlaceholders(role: string, prompt: RolePrompt, known: readonly string[]): void {
  const unknown = [...new Set([...placeholdersOf(prompt.system), ...placeholdersOf(prompt.user)])].filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    throw new AppError(ErrorCode.CONFIG_INVALID, `prompts.yaml ${role}: unknown placeholder(s) ${unknown.map((name) => `{{${name}}}`).join(', ')}; known: ${known.join(', ')}`);
  }
}

/**
 * Fills `{{name}}` placeholders. A value is inserted as is, once: placeholders
 * inside values (from code or model output) are not expanded again.
 *
 * @throws AppError INTERNAL when the template uses a placeholder `values` lacks.
 */
export function renderTemplate(template: string, values: Readonly<Record<string, string>>): string {
  return template.replace(/\{\{\s*([A-Za-z][\w]*)\s*\}\}/g, (_match, name: string) => {
    const value = values[name];
    if (value === undefined) throw new AppError(ErrorCode.INTERNAL, `prompt placeholder {{${name}}} has no value`);
    return value;
  });
}

function placeholdersOf(template: string): string[] {
  return [...template.matchAll(/\{\{\s*([A-Za-z][\w]*)\s*\}\}/g)].map((match) => match[1] ?? '');
}
