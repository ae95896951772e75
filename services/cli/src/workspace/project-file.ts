import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { AppError, ErrorCode } from '@ratchet/errors';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/** The project file at a workspace's root: how Ratchet sets the project up and runs its tests. */
export const projectFileName = '.ratchet.yaml';

/** A shell line, or a list of them run in order (each must succeed). */
const commandLines = z.union([z.string().trim().min(1, 'is empty'), z.array(z.string().trim().min(1, 'has an empty line')).min(1, 'is an empty list')]);

const projectFileSchema = z.strictObject({
  /** Run once per task in the sandbox before coding, e.g. "pip install -e .". */
  setup: commandLines.optional(),
  /** How the project runs its tests, from its root, e.g. "python -m pytest -q tests". */
  test_command: commandLines.optional(),
});

/** What a workspace's project file says, as shell lines. */
export interface ProjectFile {
  readonly setup?: string;
  readonly testCommand?: string;
}

/**
 * Reads `<dir>/.ratchet.yaml`: `setup` and `test_command`, each a shell line
 * or a list of lines (run as one script under `set -e`, so the first that
 * fails stops and a `cd` carries to the next).
 * A workspace without one gives `{}`.
 *
 * @throws AppError INVALID_ARGUMENT for a file that is not YAML or has other keys or types, naming the key and the fix.
 */
export async function readProjectFile(dir: string): Promise<ProjectFile> {
  const file = path.join(dir, projectFileName);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `${file} cannot be read (${(error as NodeJS.ErrnoException).code ?? String(error)}); fix its permissions or remove it`, { cause: error });
  }
  let data: unknown;
  try {
    data = parseYaml(text);
  } catch (error) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `${file} is not valid YAML: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`);
  }
  const parsed = projectFileSchema.safeParse(data ?? {});
  if (!parsed.success) {
    const issues = parsed.error.issues.map((issue) => (issue.path.length === 0 ? issue.message : `${issue.path.map(String).join('.')} ${issue.message}`));
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `${file}: ${issues.join('; ')} (keys: setup and test_command, each a shell command or a list of them)`);
  }
  const joined = (lines: string | string[] | undefined) => (lines === undefined ? undefined : typeof lines === 'string' ? lines : ['set -e', ...lines].join('\n'));
  const setup = joined(parsed.data.setup);
  const testCommand = joined(parsed.data.test_command);
  return { ...(setup === undefined ? {} : { setup }), ...(testCommand === undefined ? {} : { testCommand }) };
}
