import { workspacePathProblem, type TestConvention } from '@ratchet/agent';
import { z } from 'zod';

/** Largest test file the tester may write, in characters. */
export const maxTestFileChars = 100_000;

/**
 * What the tester model must reply: test files only, named so the runner
 * finds them, never overwriting a source file or a user's acceptance test.
 */
export function testReplySchema(convention: TestConvention, reservedPaths: ReadonlySet<string>) {
  const testPath = z.string().superRefine((value, context) => {
    const problem = workspacePathProblem(value);
    if (problem !== undefined) context.addIssue({ code: 'custom', message: `path ${JSON.stringify(value)} ${problem}` });
    else if (reservedPaths.has(value)) context.addIssue({ code: 'custom', message: `${value} already exists as source code or a user test; choose another test file name` });
    else if (!convention.isTestPath(value)) context.addIssue({ code: 'custom', message: `${value} is not a test file name; ${convention.fileRule}` });
  });
  return z.strictObject({
    tests: z
      .array(z.strictObject({ path: testPath, content: z.string().min(1).max(maxTestFileChars) }))
      .min(1)
      .max(20),
    summary: z.string().min(1),
  });
}
