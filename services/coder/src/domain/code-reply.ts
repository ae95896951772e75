import { workspaceFileProblem, workspacePathProblem, type TestConvention } from '@ratchet/agent';
import type { SourceFile } from '@ratchet/contracts';
import { z } from 'zod';

/** Largest file the coder may write, in characters. */
export const maxFileChars = 200_000;
/** Most files in one reply. */
export const maxFiles = 50;

/**
 * What the coder model must reply. Paths are checked here, inside the schema,
 * so a bad path goes back to the model in the repair round: inside the
 * workspace and outside version-control metadata (see `workspacePathProblem`),
 * not a test file, not one of the read-only tests, and no file git would take
 * for a repository's HEAD (see `workspaceFileProblem`).
 */
export function codeReplySchema(convention: TestConvention, readOnlyPaths: ReadonlySet<string>) {
  const sourcePath = z.string().superRefine((value, context) => {
    const problem = workspacePathProblem(value);
    if (problem !== undefined) context.addIssue({ code: 'custom', message: `path ${JSON.stringify(value)} ${problem}` });
    else if (readOnlyPaths.has(value)) context.addIssue({ code: 'custom', message: `${value} is a test file and read-only; change the code, not the tests` });
    else if (convention.isTestPath(value)) context.addIssue({ code: 'custom', message: `${value} is a test file name; the coder writes source files only` });
  });
  return z.strictObject({
    files: z
      .array(
        z.strictObject({ path: sourcePath, content: z.string().max(maxFileChars) }).superRefine((file, context) => {
          // The path alone passed; a file named HEAD can still make its directory a git repository by its content.
          if (workspacePathProblem(file.path) !== undefined) return;
          const problem = workspaceFileProblem(file.path, file.content);
          if (problem !== undefined) context.addIssue({ code: 'custom', path: ['content'], message: `path ${JSON.stringify(file.path)} ${problem}; name the file otherwise` });
        }),
      )
      .min(1)
      .max(maxFiles),
    deletedPaths: z.array(sourcePath),
    summary: z.string().min(1),
    /** Tests that contradict the goal, with the evidence; required in the JSON Schema (strict mode), empty by default. */
    disputedTests: z.array(z.strictObject({ path: z.string().min(1), testName: z.string(), reason: z.string().min(1) })).max(20).default([]),
  });
}

export type CodeReply = z.infer<ReturnType<typeof codeReplySchema>>;

/**
 * The workspace after applying a reply: `current` with replied files replaced
 * or added and deleted paths removed, in path order. A path both written and
 * deleted stays written.
 */
export function applyReply(current: readonly SourceFile[], reply: CodeReply): SourceFile[] {
  const byPath = new Map(current.map((file) => [file.path, file.content]));
  for (const deleted of reply.deletedPaths) byPath.delete(deleted);
  for (const file of reply.files) byPath.set(file.path, file.content);
  return [...byPath.entries()].sort(([left], [right]) => left.localeCompare(right)).map(([path, content]) => ({ path, content }));
}
